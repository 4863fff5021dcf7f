/* fuzz_info.c: fuzz target for info_parse_server() (src/proto/info.c), which reads
 * run_id and uptime_in_seconds out of the `INFO server` reply of a master (a
 * master's bytes: untrusted).
 *
 * The input is copied into a malloc of exactly its length, not NUL-terminated,
 * so that AddressSanitizer reports any read past len.  Invariants checked:
 *  - the result is 0 or -1, and 0 exactly when both fields were found;
 *  - run_id is "" or 40 hex digits followed by a NUL;
 *  - uptime_s is -1 or in 0..10^18;
 *  - a run_id / uptime found really is the value of a whole line of the text
 *    ("run_id:<v>" or "uptime_in_seconds:<v>", ended by LF, CRLF or the end);
 *  - the same text followed by "\nrun_id:<40 hex>\r\nuptime_in_seconds:42\n"
 *    parses to exactly those values (later lines win, line splitting holds). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_targets.h"
#include "proto/info.h"

#define APPENDED_ID "0123456789abcdefABCDEF0123456789abcdef01"

static int is_hex40(const char *s) {
  for (int i = 0; i < INFO_RUN_ID_LEN; i++)
    if (strchr("0123456789abcdefABCDEF", s[i]) == NULL || s[i] == '\0')
      return 0;
  return s[INFO_RUN_ID_LEN] == '\0';
}

/* Whether text holds a whole line "<key>:<value>" (the line ends with "\n",
 * "\r\n" or the end of the text). */
static int has_line(const char *text, size_t len, const char *key, const char *value) {
  size_t key_len = strlen(key), value_len = strlen(value);
  size_t line_len = key_len + 1 + value_len;
  for (size_t i = 0; i + line_len <= len; i++) {
    if (i > 0 && text[i - 1] != '\n')
      continue;
    if (memcmp(text + i, key, key_len) != 0 || text[i + key_len] != ':' ||
        memcmp(text + i + key_len + 1, value, value_len) != 0)
      continue;
    size_t e = i + line_len;
    if (e == len || text[e] == '\n' || (text[e] == '\r' && (e + 1 == len || text[e + 1] == '\n')))
      return 1;
  }
  return 0;
}

static void check_result(const char *text, size_t len, int rc, const info_server_t *info) {
  FUZZ_CHECK(rc == 0 || rc == -1);
  FUZZ_CHECK(info->run_id[0] == '\0' || is_hex40(info->run_id));
  FUZZ_CHECK(info->uptime_s == -1 || (info->uptime_s >= 0 && info->uptime_s < 1000000000000000000));
  FUZZ_CHECK((rc == 0) == (info->run_id[0] != '\0' && info->uptime_s >= 0));
  if (info->run_id[0] != '\0')
    FUZZ_CHECK(has_line(text, len, "run_id", info->run_id));
  if (info->uptime_s >= 0) {
    char v[32];
    snprintf(v, sizeof v, "%lld", (long long)info->uptime_s);
    /* The parser accepts leading zeros: look for the digits with any of them. */
    int found = 0;
    char padded[64];
    for (int zeros = 0; zeros < 18 && !found; zeros++) {
      memset(padded, '0', (size_t)zeros);
      strcpy(padded + zeros, v);
      found = has_line(text, len, "uptime_in_seconds", padded);
    }
    FUZZ_CHECK(found);
  }
}

int fuzz_one_info(const uint8_t *data, size_t size) {
  char *text = fuzz_copy(data, size);

  info_server_t info;
  memset(&info, 0xA5, sizeof info);
  int rc = info_parse_server(text, size, &info);
  check_result(text, size, rc, &info);

  static const char tail[] = "\nrun_id:" APPENDED_ID "\r\nuptime_in_seconds:42\n";
  size_t longer = size + sizeof tail - 1;
  char *more = malloc(longer);
  FUZZ_CHECK(more != NULL);
  if (size > 0)
    memcpy(more, data, size);
  memcpy(more + size, tail, sizeof tail - 1);
  info_server_t again;
  memset(&again, 0x5A, sizeof again);
  rc = info_parse_server(more, longer, &again);
  check_result(more, longer, rc, &again);
  FUZZ_CHECK(rc == 0 && strcmp(again.run_id, APPENDED_ID) == 0 && again.uptime_s == 42);

  free(more);
  free(text);
  return 0;
}
