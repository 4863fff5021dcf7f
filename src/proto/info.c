/* info.c: INFO server and INFO replication parsing (see info.h).  Reads untrusted bytes: bounded
 * by len, never by a NUL. */
#include "proto/info.h"

#include <string.h>

#include "util/status.h"

static int line_is(const char *line, size_t len, const char *key, const char **value,
                   size_t *value_len) {
  size_t key_len = strlen(key);
  if (len <= key_len || memcmp(line, key, key_len) != 0 || line[key_len] != ':')
    return 0;
  *value = line + key_len + 1;
  *value_len = len - key_len - 1;
  return 1;
}

static int is_hex(const char *s, size_t len) {
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
      return 0;
  }
  return 1;
}

/* The next line of [*p, end) without its "\r\n"; *p moves past it.  0 at
 * the end. */
static int next_line(const char **p, const char *end, const char **line, size_t *len) {
  if (*p >= end)
    return 0;
  const char *nl = memchr(*p, '\n', (size_t)(end - *p));
  const char *line_end = nl != NULL ? nl : end;
  *line = *p;
  *len = (size_t)(line_end - *p);
  if (*len > 0 && (*p)[*len - 1] == '\r')
    (*len)--;
  *p = nl != NULL ? nl + 1 : end;
  return 1;
}

/* A decimal of at most max_digits digits, the whole value: ST_OK with
 * *out, or ST_EINVAL. */
static status_t parse_digits(const char *value, size_t len, size_t max_digits, int64_t *out) {
  int64_t v = 0;
  size_t i = 0;
  for (; i < len && i < max_digits && value[i] >= '0' && value[i] <= '9'; i++)
    v = v * 10 + (value[i] - '0');
  if (i != len || i == 0)
    return ST_EINVAL;
  *out = v;
  return ST_OK;
}

/* "MAJOR.MINOR.PATCH" (each 1-2 digits; a suffix after the patch ignored)
 * packed as CAPS_VERSION; 0 when it is not one. */
static uint32_t parse_version(const char *value, size_t len) {
  uint32_t part[3] = {0, 0, 0};
  size_t i = 0;
  for (int k = 0; k < 3; k++) {
    size_t digits = 0;
    for (; i < len && value[i] >= '0' && value[i] <= '9' && digits < 2; i++, digits++)
      part[k] = part[k] * 10u + (uint32_t)(value[i] - '0');
    if (digits == 0 || (k < 2 && (i >= len || value[i++] != '.')))
      return 0;
  }
  return part[0] * 10000u + part[1] * 100u + part[2];
}

status_t info_parse_server(const char *text, size_t len, info_server_t *out) {
  const char *p = text, *end = text + len;
  out->run_id[0] = '\0';
  out->uptime_s = -1;
  out->version = 0;
  out->is_valkey = 0;
  uint32_t redis_version = 0, valkey_version = 0;
  const char *line;
  size_t line_len;
  while (next_line(&p, end, &line, &line_len)) {
    const char *value;
    size_t value_len;
    if (line_is(line, line_len, "run_id", &value, &value_len)) {
      if (value_len == INFO_RUN_ID_LEN && is_hex(value, value_len)) {
        memcpy(out->run_id, value, INFO_RUN_ID_LEN);
        out->run_id[INFO_RUN_ID_LEN] = '\0';
      }
    } else if (line_is(line, line_len, "uptime_in_seconds", &value, &value_len)) {
      int64_t v;
      if (parse_digits(value, value_len, 18, &v) == ST_OK)
        out->uptime_s = v;
    } else if (line_is(line, line_len, "redis_version", &value, &value_len)) {
      redis_version = parse_version(value, value_len);
    } else if (line_is(line, line_len, "valkey_version", &value, &value_len)) {
      valkey_version = parse_version(value, value_len);
    } else if (line_is(line, line_len, "server_name", &value, &value_len)) {
      out->is_valkey = value_len == 6 && memcmp(value, "valkey", 6) == 0;
    }
  }
  /* Valkey 7.2 and 8 say server_name:valkey only in later patches, but
   * every Valkey gives valkey_version. */
  if (valkey_version != 0)
    out->is_valkey = 1;
  out->version = out->is_valkey ? valkey_version : redis_version;
  return out->run_id[0] != '\0' && out->uptime_s >= 0 ? ST_OK : ST_EINVAL;
}

/* A 40-hex id into out ("" unless it is one; all zeros: "" too). */
static void take_id(const char *value, size_t len, char *out) {
  out[0] = '\0';
  if (len != INFO_RUN_ID_LEN || !is_hex(value, len))
    return;
  size_t zeros = 0;
  while (zeros < len && value[zeros] == '0')
    zeros++;
  if (zeros == len)
    return;
  memcpy(out, value, len);
  out[len] = '\0';
}

status_t info_parse_replication(const char *text, size_t len, info_replication_t *out) {
  const char *p = text, *end = text + len;
  memset(out, 0, sizeof *out);
  out->connected_replicas = -1;
  const char *line;
  size_t line_len;
  while (next_line(&p, end, &line, &line_len)) {
    const char *value;
    size_t value_len;
    if (line_is(line, line_len, "role", &value, &value_len)) {
      size_t n = value_len < sizeof out->role - 1 ? value_len : sizeof out->role - 1;
      memcpy(out->role, value, n);
      out->role[n] = '\0';
      out->is_master = value_len == 6 && memcmp(value, "master", 6) == 0;
    } else if (line_is(line, line_len, "master_replid", &value, &value_len)) {
      take_id(value, value_len, out->replid);
    } else if (line_is(line, line_len, "master_replid2", &value, &value_len)) {
      take_id(value, value_len, out->replid2);
    } else if (line_is(line, line_len, "connected_slaves", &value, &value_len)) {
      int64_t v;
      if (parse_digits(value, value_len, 9, &v) == ST_OK)
        out->connected_replicas = (long)v;
    }
  }
  return out->role[0] != '\0' ? ST_OK : ST_EINVAL;
}
