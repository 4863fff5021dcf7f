/* resp.c: RESP command formatting (see resp.h). */
#include "proto/resp.h"

#include <string.h>

/* Numbers here are mostly a bulk string's length or a count, one or two
 * digits: those take no loop. */
static size_t dec_digits(uint64_t v) {
  if (v < 10)
    return 1;
  if (v < 100)
    return 2;
  size_t n = 3;
  for (v /= 1000; v > 0; v /= 10)
    n++;
  return n;
}

/* Writes v's decimal digits at out (no NUL); returns the end. */
static char *put_dec(char *out, uint64_t v) {
  if (v < 10) {
    *out = (char)('0' + v);
    return out + 1;
  }
  if (v < 100) {
    out[0] = (char)('0' + v / 10);
    out[1] = (char)('0' + v % 10);
    return out + 2;
  }
  size_t n = dec_digits(v);
  for (size_t i = n; i > 0; i--) {
    out[i - 1] = (char)('0' + v % 10);
    v /= 10;
  }
  return out + n;
}

size_t resp_u64_to_dec(uint64_t v, char *buf) {
  size_t n = (size_t)(put_dec(buf, v) - buf);
  buf[n] = '\0';
  return n;
}

size_t resp_command_len(int argc, const size_t *argv_len) {
  size_t total = 1 + dec_digits((uint64_t)argc) + 2; /* *<argc>\r\n */
  for (int i = 0; i < argc; i++)
    total += 1 + dec_digits(argv_len[i]) + 2 + argv_len[i] + 2; /* $<len>\r\n<bytes>\r\n */
  return total;
}

/* The digits go straight into out: no buffer copied after. */
void resp_write_command(char *out, int argc, const char *const *argv, const size_t *argv_len) {
  *out++ = '*';
  out = put_dec(out, (uint64_t)argc);
  *out++ = '\r';
  *out++ = '\n';
  for (int i = 0; i < argc; i++) {
    *out++ = '$';
    out = put_dec(out, argv_len[i]);
    *out++ = '\r';
    *out++ = '\n';
    memcpy(out, argv[i], argv_len[i]);
    out += argv_len[i];
    *out++ = '\r';
    *out++ = '\n';
  }
}
