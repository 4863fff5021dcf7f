/* torture_opts.h: the command-line parser of the torture driver (torture.c)
 * and its worker (torture_worker.c): each describes its options in a table
 * (name, type, where the value goes), and one loop reads them. */
#ifndef TORTURE_OPTS_H
#define TORTURE_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torture_common.h"

typedef enum {
  TO_FLAG,     /* no value: sets the int to 1 */
  TO_INT,      /* int */
  TO_UNSIGNED, /* unsigned */
  TO_LONG,     /* long */
  TO_U64,      /* uint64_t */
  TO_STR,      /* const char *: the argument itself */
  TO_STRS,     /* const char *[max]: appended, *count of them */
  TO_PRIM      /* int: a torture_prim_names index, -1 when unknown */
} torture_opt_type_t;

typedef struct {
  const char *name; /* "--seed" */
  torture_opt_type_t type;
  void *var;
  int *count; /* TO_STRS */
  int max;    /* TO_STRS */
} torture_opt_t;

/* Reads argv[1..argc) against the table: 0, or -1 with a message on stderr
 * (prefixed with prog) for an unknown option or a missing value. */
static inline int torture_parse_opts(int argc, char **argv, const torture_opt_t *table, size_t n,
                                     const char *prog) {
  for (int i = 1; i < argc; i++) {
    const torture_opt_t *o = NULL;
    for (size_t k = 0; k < n && o == NULL; k++)
      if (strcmp(argv[i], table[k].name) == 0)
        o = &table[k];
    if (o == NULL) {
      fprintf(stderr, "%s: unknown option %s\n", prog, argv[i]);
      return -1;
    }
    if (o->type == TO_FLAG) {
      *(int *)o->var = 1;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "%s: %s needs a value\n", prog, argv[i]);
      return -1;
    }
    const char *v = argv[++i];
    switch (o->type) {
    case TO_INT:
      *(int *)o->var = atoi(v);
      break;
    case TO_UNSIGNED:
      *(unsigned *)o->var = (unsigned)strtoul(v, NULL, 10);
      break;
    case TO_LONG:
      *(long *)o->var = atol(v);
      break;
    case TO_U64:
      *(uint64_t *)o->var = strtoull(v, NULL, 10);
      break;
    case TO_STR:
      *(const char **)o->var = v;
      break;
    case TO_STRS:
      if (*o->count < o->max)
        ((const char **)o->var)[(*o->count)++] = v;
      break;
    case TO_PRIM:
      *(int *)o->var = -1;
      for (int p = 0; p < PRIM_N; p++)
        if (strcmp(v, torture_prim_names[p]) == 0)
          *(int *)o->var = p;
      break;
    default:
      break;
    }
  }
  return 0;
}

#endif
