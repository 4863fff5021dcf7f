/* test_info.c: unit tests for src/proto/info.c, reading run_id and
 * uptime_in_seconds out of an `INFO server` reply.
 *  - a realistic reply (CRLF lines, '# Server' header, many other fields),
 *    from Redis 7.0 and from Valkey 8.0 (which adds server_name and
 *    valkey_version and keeps redis_version for compatibility);
 *  - LF-only lines, any field order, no trailing newline;
 *  - missing fields → -1 with run_id "" / uptime -1;
 *  - malformed uptime (sign, spaces, letters, empty, too many digits) and a
 *    run_id of the wrong length are treated as absent;
 *  - the text is bounded by len, not by a NUL: embedded NULs do not stop the
 *    parse, bytes past len are never read, zero length parses nothing;
 *  - a run_id that itself contains a NUL is not accepted as a shorter id;
 *  - keys are matched whole ("run_id_x:" and "xrun_id:" are not run_id). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unit_support.h"

#include "proto/info.h"

#define RUN_ID "3c5c3a6fe2d7a4e8b0e2f2f1b2f3c4d5e6f7a8b9"
#define RUN_ID2 "0123456789abcdef0123456789abcdef01234567"

static const char realistic[] = "# Server\r\n"
                                "redis_version:7.0.15\r\n"
                                "redis_git_sha1:00000000\r\n"
                                "redis_git_dirty:0\r\n"
                                "redis_build_id:d81b8ff71cfb150e\r\n"
                                "redis_mode:standalone\r\n"
                                "os:Linux 6.1.0-18-amd64 x86_64\r\n"
                                "arch_bits:64\r\n"
                                "monotonic_clock:POSIX clock_gettime\r\n"
                                "multiplexing_api:epoll\r\n"
                                "atomicvar_api:c11-builtin\r\n"
                                "gcc_version:12.2.0\r\n"
                                "process_id:4242\r\n"
                                "process_supervised:no\r\n"
                                "run_id:" RUN_ID "\r\n"
                                "tcp_port:6379\r\n"
                                "server_time_usec:1700000000123456\r\n"
                                "uptime_in_seconds:86461\r\n"
                                "uptime_in_days:1\r\n"
                                "hz:10\r\n"
                                "configured_hz:10\r\n"
                                "lru_clock:1234567\r\n"
                                "executable:/usr/bin/redis-server\r\n"
                                "config_file:\r\n"
                                "io_threads_active:0\r\n";

/* Valkey 8.0.1's reply (Debian bookworm-backports), as it sends it. */
static const char valkey8[] = "# Server\r\n"
                              "redis_version:7.2.4\r\n"
                              "server_name:valkey\r\n"
                              "valkey_version:8.0.1\r\n"
                              "redis_git_sha1:00000000\r\n"
                              "redis_git_dirty:0\r\n"
                              "redis_build_id:39f7c371e0a96e3d\r\n"
                              "server_mode:standalone\r\n"
                              "os:Linux 6.1.0-18-amd64 x86_64\r\n"
                              "arch_bits:64\r\n"
                              "monotonic_clock:POSIX clock_gettime\r\n"
                              "multiplexing_api:epoll\r\n"
                              "gcc_version:12.2.0\r\n"
                              "process_id:13190\r\n"
                              "process_supervised:no\r\n"
                              "run_id:" RUN_ID2 "\r\n"
                              "tcp_port:26399\r\n"
                              "server_time_usec:1700000000557253\r\n"
                              "uptime_in_seconds:7\r\n"
                              "uptime_in_days:0\r\n"
                              "hz:10\r\n"
                              "configured_hz:10\r\n"
                              "lru_clock:268304\r\n"
                              "executable:/usr/bin/valkey-server\r\n"
                              "config_file:\r\n"
                              "io_threads_active:0\r\n"
                              "availability_zone:\r\n"
                              "listener0:name=tcp,bind=127.0.0.1,port=26399\r\n";

static int parse(const char *text, info_server_t *out) {
  return info_parse_server(text, strlen(text), out);
}

static void test_realistic(void **state) {
  (void)state;
  info_server_t info;
  assert_int_equal(info_parse_server(realistic, sizeof realistic - 1, &info), ST_OK);
  assert_string_equal(info.run_id, RUN_ID);
  assert_int_equal(info.uptime_s, 86461);
}

static void test_valkey8(void **state) {
  (void)state;
  info_server_t info;
  assert_int_equal(info_parse_server(valkey8, sizeof valkey8 - 1, &info), ST_OK);
  assert_string_equal(info.run_id, RUN_ID2);
  assert_int_equal(info.uptime_s, 7);
}

static void test_lf_only_any_order_no_trailing_newline(void **state) {
  (void)state;
  info_server_t info;
  assert_int_equal(parse("uptime_in_seconds:0\nrun_id:" RUN_ID, &info), 0);
  assert_string_equal(info.run_id, RUN_ID);
  assert_int_equal(info.uptime_s, 0);

  assert_int_equal(parse("# Server\r\nrun_id:" RUN_ID "\r\nuptime_in_seconds:42", &info), 0);
  assert_int_equal(info.uptime_s, 42);
  /* A trailing '\r' without '\n'. */
  assert_int_equal(parse("run_id:" RUN_ID "\r\nuptime_in_seconds:42\r", &info), 0);
  assert_int_equal(info.uptime_s, 42);
  /* Blank lines and sections in between. */
  assert_int_equal(parse("\r\n\r\n# Server\r\n\r\nrun_id:" RUN_ID "\r\n\r\n# Clients\r\n"
                         "connected_clients:1\r\nuptime_in_seconds:7\r\n\r\n",
                         &info),
                   0);
  assert_int_equal(info.uptime_s, 7);
  /* Large uptime (18 digits). */
  assert_int_equal(parse("run_id:" RUN_ID "\nuptime_in_seconds:123456789012345678\n", &info), 0);
  assert_int_equal(info.uptime_s, 123456789012345678LL);
}

static void test_missing_fields(void **state) {
  (void)state;
  info_server_t info;
  assert_int_equal(parse("# Server\r\nuptime_in_seconds:10\r\n", &info), -1);
  assert_string_equal(info.run_id, "");
  assert_int_equal(info.uptime_s, 10);

  assert_int_equal(parse("# Server\r\nrun_id:" RUN_ID "\r\n", &info), -1);
  assert_string_equal(info.run_id, RUN_ID);
  assert_int_equal(info.uptime_s, -1);

  assert_int_equal(parse("# Server\r\nredis_version:7.0.0\r\n", &info), -1);
  assert_string_equal(info.run_id, "");
  assert_int_equal(info.uptime_s, -1);

  /* uptime_in_days is not uptime_in_seconds. */
  assert_int_equal(parse("run_id:" RUN_ID "\r\nuptime_in_days:3\r\n", &info), -1);
  assert_int_equal(info.uptime_s, -1);

  /* Results of an earlier parse do not leak into the next one. */
  assert_int_equal(info_parse_server(realistic, sizeof realistic - 1, &info), ST_OK);
  assert_int_equal(parse("nothing:here\r\n", &info), -1);
  assert_string_equal(info.run_id, "");
  assert_int_equal(info.uptime_s, -1);
}

static void test_malformed_uptime(void **state) {
  (void)state;
  static const char *const bad[] = {
      "uptime_in_seconds:",
      "uptime_in_seconds:-5",
      "uptime_in_seconds:+5",
      "uptime_in_seconds: 5",
      "uptime_in_seconds:5 ",
      "uptime_in_seconds:5s",
      "uptime_in_seconds:abc",
      "uptime_in_seconds:0x10",
      "uptime_in_seconds:1.5",
      "uptime_in_seconds:1234567890123456789",     /* 19 digits */
      "uptime_in_seconds:99999999999999999999999", /* would overflow */
      "uptime_in_seconds",
      "uptime_in_seconds=5",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[256];
    info_server_t info;
    snprintf(text, sizeof text, "run_id:%s\r\n%s\r\n", RUN_ID, bad[i]);
    if (parse(text, &info) != -1)
      fail_msg("accepted \"%s\" as uptime %lld", bad[i], (long long)info.uptime_s);
    assert_int_equal(info.uptime_s, -1);
    assert_string_equal(info.run_id, RUN_ID);
  }
}

static void test_run_id_wrong_length(void **state) {
  (void)state;
  info_server_t info;
  /* 39 and 41 characters, and empty. */
  assert_int_equal(parse("run_id:"
                         "3c5c3a6fe2d7a4e8b0e2f2f1b2f3c4d5e6f7a8b\r\n"
                         "uptime_in_seconds:1\r\n",
                         &info),
                   -1);
  assert_string_equal(info.run_id, "");
  assert_int_equal(parse("run_id:" RUN_ID "0\r\nuptime_in_seconds:1\r\n", &info), -1);
  assert_string_equal(info.run_id, "");
  assert_int_equal(parse("run_id:\r\nuptime_in_seconds:1\r\n", &info), -1);
  assert_string_equal(info.run_id, "");
  /* Keys are matched whole. */
  assert_int_equal(
      parse("run_idx:" RUN_ID "\r\nxrun_id:" RUN_ID "\r\nuptime_in_seconds:1\r\n", &info), -1);
  assert_string_equal(info.run_id, "");
  assert_int_equal(parse("RUN_ID:" RUN_ID "\r\nuptime_in_seconds:1\r\n", &info), -1);
}

static void test_later_field_wins_but_bad_value_ignored(void **state) {
  (void)state;
  info_server_t info;
  /* A second, malformed run_id does not erase the good one. */
  assert_int_equal(parse("run_id:" RUN_ID "\r\nrun_id:short\r\nuptime_in_seconds:1\r\n", &info), 0);
  assert_string_equal(info.run_id, RUN_ID);
  /* Two good ones: the last one. */
  assert_int_equal(
      parse("run_id:" RUN_ID "\r\nrun_id:" RUN_ID2 "\r\nuptime_in_seconds:1\r\n", &info), 0);
  assert_string_equal(info.run_id, RUN_ID2);
}

static void test_embedded_nul_between_lines(void **state) {
  (void)state;
  /* The reply is length-delimited: a NUL byte is just a byte. */
  static const char text[] =
      "# Server\r\n\0garbage\0\r\nrun_id:" RUN_ID "\r\n\0\0\r\nuptime_in_seconds:99\r\n";
  info_server_t info;
  assert_int_equal(info_parse_server(text, sizeof text - 1, &info), ST_OK);
  assert_string_equal(info.run_id, RUN_ID);
  assert_int_equal(info.uptime_s, 99);
}

static void test_embedded_nul_in_values(void **state) {
  (void)state;
  info_server_t info;
  /* A NUL inside the uptime digits makes it malformed. */
  static const char up[] = "run_id:" RUN_ID "\r\nuptime_in_seconds:12\0"
                           "34\r\n";
  assert_int_equal(info_parse_server(up, sizeof up - 1, &info), ST_EINVAL);
  assert_int_equal(info.uptime_s, -1);

  /* A 40-byte run_id with a NUL in it must not be accepted as a 10-byte id
   * (restart detection compares run_ids as C strings). */
  static const char rid[] = "run_id:0123456789\0"
                            "123456789abcdef0123456789abcd\r\n"
                            "uptime_in_seconds:5\r\n";
  int rc = info_parse_server(rid, sizeof rid - 1, &info);
  if (rc == 0 && strlen(info.run_id) != INFO_RUN_ID_LEN)
    fail_msg("run_id with an embedded NUL accepted as \"%s\" (%zu bytes, expected %d or "
             "rejection)",
             info.run_id, strlen(info.run_id), INFO_RUN_ID_LEN);
}

static void test_bounded_by_len(void **state) {
  (void)state;
  info_server_t info;
  static const char text[] = "run_id:" RUN_ID "\r\nuptime_in_seconds:123456\r\n";
  /* Cut inside the uptime: only the digits within len count. */
  size_t cut = strlen("run_id:" RUN_ID "\r\nuptime_in_seconds:12");
  assert_int_equal(info_parse_server(text, cut, &info), ST_OK);
  assert_int_equal(info.uptime_s, 12);
  /* Cut inside the run_id: too short, so absent. */
  assert_int_equal(info_parse_server(text, 20, &info), ST_EINVAL);
  assert_string_equal(info.run_id, "");

  /* A heap buffer of exactly len bytes with no terminator: ASan catches any
   * read past it. */
  size_t len = sizeof text - 1 - 2; /* without the final CRLF */
  char *exact = malloc(len);
  assert_non_null(exact);
  memcpy(exact, text, len);
  assert_int_equal(info_parse_server(exact, len, &info), ST_OK);
  assert_int_equal(info.uptime_s, 123456);
  /* Ends right after "uptime_in_seconds:" (empty value at the very end). */
  size_t len2 = strlen("run_id:" RUN_ID "\r\nuptime_in_seconds:");
  assert_int_equal(info_parse_server(exact, len2, &info), ST_EINVAL);
  assert_int_equal(info.uptime_s, -1);
  /* Ends right after the key, before ':'. */
  assert_int_equal(info_parse_server(exact, len2 - 1, &info), ST_EINVAL);
  free(exact);
}

static void test_zero_length(void **state) {
  (void)state;
  info_server_t info;
  memset(&info, 0x55, sizeof info);
  assert_int_equal(info_parse_server("run_id:" RUN_ID "\r\nuptime_in_seconds:1\r\n", 0, &info),
                   ST_EINVAL);
  assert_string_equal(info.run_id, "");
  assert_int_equal(info.uptime_s, -1);
  assert_int_equal(info_parse_server("", 0, &info), ST_EINVAL);
  assert_int_equal(info_parse_server("\n", 1, &info), ST_EINVAL);
  assert_int_equal(info_parse_server("\r\n\r\n", 4, &info), ST_EINVAL);
}

UNIT_MAIN(cmocka_unit_test(test_realistic), cmocka_unit_test(test_valkey8),
          cmocka_unit_test(test_lf_only_any_order_no_trailing_newline),
          cmocka_unit_test(test_missing_fields), cmocka_unit_test(test_malformed_uptime),
          cmocka_unit_test(test_run_id_wrong_length),
          cmocka_unit_test(test_later_field_wins_but_bad_value_ignored),
          cmocka_unit_test(test_embedded_nul_between_lines),
          cmocka_unit_test(test_embedded_nul_in_values), cmocka_unit_test(test_bounded_by_len),
          cmocka_unit_test(test_zero_length))
