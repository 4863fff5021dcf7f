/* list.h: an intrusive circular doubly-linked list (the shape of libuv's
 * queue.h).  Embedding the links saves a malloc per queued item. */
#ifndef REDLOCK_LIST_H
#define REDLOCK_LIST_H

#include <stddef.h>

typedef struct list_node {
  struct list_node *prev, *next;
} list_node_t;

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#define list_entry(ptr, type, member) container_of(ptr, type, member)

static inline void list_init(list_node_t *head) { head->prev = head->next = head; }
static inline int list_empty(const list_node_t *head) { return head->next == head; }
static inline int list_linked(const list_node_t *node) {
  return node->next != NULL && node->next != node;
}

static inline void list_insert_tail(list_node_t *head, list_node_t *node) {
  node->prev = head->prev;
  node->next = head;
  head->prev->next = node;
  head->prev = node;
}

static inline void list_insert_head(list_node_t *head, list_node_t *node) {
  list_insert_tail(head->next, node);
}

static inline void list_remove(list_node_t *node) {
  node->prev->next = node->next;
  node->next->prev = node->prev;
  node->prev = node->next = node;
}

/* Moves every node of `from` to the empty list `to`; `from` becomes empty. */
static inline void list_move_all(list_node_t *from, list_node_t *to) {
  if (list_empty(from)) {
    list_init(to);
    return;
  }
  to->next = from->next;
  to->prev = from->prev;
  to->next->prev = to;
  to->prev->next = to;
  list_init(from);
}

#endif
