/* fake_out.c: a fake master's reply writers (fake_exec.h): RESP2 bytes
 * appended to a growing buffer from the library's allocator; a writer that
 * cannot grow it leaves it as it was. */
#include <stdio.h>
#include <string.h>

#include "testing/fake_exec.h"
#include "util/alloc.h"

status_t fake_out_raw(fake_out_t *out, const char *bytes, size_t len) {
  if (out->cap - out->len < len) {
    size_t cap = out->cap ? out->cap : 64;
    while (cap - out->len < len)
      cap *= 2;
    char *buf = rl_realloc(out->buf, cap);
    if (buf == NULL)
      return ST_ENOMEM;
    out->buf = buf;
    out->cap = cap;
  }
  if (len > 0)
    memcpy(out->buf + out->len, bytes, len);
  out->len += len;
  return ST_OK;
}

/* A line: kind ('+', '-', ':', '$' or '*'), text, CRLF, in one append. */
static status_t line(fake_out_t *out, char kind, const char *text, size_t len) {
  size_t at = out->len;
  status_t st = fake_out_raw(out, &kind, 1);
  if (st == ST_OK)
    st = fake_out_raw(out, text, len);
  if (st == ST_OK)
    st = fake_out_raw(out, "\r\n", 2);
  if (st != ST_OK)
    out->len = at;
  return st;
}

status_t fake_out_status(fake_out_t *out, const char *text) {
  return line(out, '+', text, strlen(text));
}

status_t fake_out_error(fake_out_t *out, const char *text) {
  return line(out, '-', text, strlen(text));
}

static status_t number(fake_out_t *out, char kind, long long v) {
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%lld", v);
  return line(out, kind, buf, (size_t)n);
}

status_t fake_out_int(fake_out_t *out, long long v) { return number(out, ':', v); }

status_t fake_out_array(fake_out_t *out, long long n) { return number(out, '*', n); }

status_t fake_out_nil(fake_out_t *out) { return fake_out_raw(out, "$-1\r\n", 5); }

status_t fake_out_bulk(fake_out_t *out, const char *s, size_t len) {
  size_t at = out->len;
  status_t st = number(out, '$', (long long)len);
  if (st == ST_OK)
    st = fake_out_raw(out, s, len);
  if (st == ST_OK)
    st = fake_out_raw(out, "\r\n", 2);
  if (st != ST_OK)
    out->len = at;
  return st;
}

void fake_out_free(fake_out_t *out) {
  rl_free(out->buf);
  out->buf = NULL;
  out->len = out->cap = 0;
}

status_t fake_out_arity_error(fake_out_t *out, const char *name, size_t len) {
  char lower[41], text[128];
  size_t n = len < 40 ? len : 40;
  for (size_t i = 0; i < n; i++)
    lower[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
  lower[n] = '\0';
  snprintf(text, sizeof text, "ERR wrong number of arguments for '%s' command", lower);
  return fake_out_error(out, text);
}
