/* resp.c: RESP command formatting (see resp.h). */
#include "proto/resp.h"

#include <string.h>

static size_t dec_digits(uint64_t v) {
  size_t n = 1;
  while (v >= 10) {
    v /= 10;
    n++;
  }
  return n;
}

size_t resp_u64_to_dec(uint64_t v, char *buf) {
  size_t n = dec_digits(v);
  buf[n] = '\0';
  for (size_t i = n; i > 0; i--) {
    buf[i - 1] = (char)('0' + v % 10);
    v /= 10;
  }
  return n;
}

size_t resp_command_len(int argc, const size_t *argv_len) {
  size_t total = 1 + dec_digits((uint64_t)argc) + 2; /* *<argc>\r\n */
  for (int i = 0; i < argc; i++)
    total += 1 + dec_digits(argv_len[i]) + 2 + argv_len[i] + 2; /* $<len>\r\n<bytes>\r\n */
  return total;
}

void resp_write_command(char *out, int argc, const char *const *argv, const size_t *argv_len) {
  char digits[24];
  *out++ = '*';
  size_t n = resp_u64_to_dec((uint64_t)argc, digits);
  memcpy(out, digits, n);
  out += n;
  *out++ = '\r';
  *out++ = '\n';
  for (int i = 0; i < argc; i++) {
    *out++ = '$';
    n = resp_u64_to_dec(argv_len[i], digits);
    memcpy(out, digits, n);
    out += n;
    *out++ = '\r';
    *out++ = '\n';
    memcpy(out, argv[i], argv_len[i]);
    out += argv_len[i];
    *out++ = '\r';
    *out++ = '\n';
  }
}
