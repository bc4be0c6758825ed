#ifndef HERALD_CLINUX_SHIM_H
#define HERALD_CLINUX_SHIM_H

// The Linux calls the Glibc module leaves out: epoll, eventfd and accept4 (for the Posix module).

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

// accept4 is declared only under _GNU_SOURCE, which the Glibc module is built without. <sys/socket.h> is not
// included here: the Glibc module already provides it to Swift, and a second copy makes its names ambiguous.
struct sockaddr;
extern int accept4(int fd, struct sockaddr *address, unsigned int *length, int flags);

/// `accept4(fd, NULL, NULL, flags)`: accepts with SOCK_NONBLOCK | SOCK_CLOEXEC set in one call.
static inline int herald_accept4(int fd, int flags) {
    return accept4(fd, 0, 0, flags);
}

/// Registers `fd` for `events`; the event's data carries `fd` back (with a tag of 0).
static inline int herald_epoll_add(int epoll, int fd, uint32_t events) {
    struct epoll_event event = { .events = events, .data = { .u64 = (uint32_t)fd } };
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
}

/// Changes what `fd` is watched for, registering it if it was not; the event's data carries `fd` back in its low 32
/// bits and `tag` in its high 32.
static inline int herald_epoll_set(int epoll, int fd, uint32_t events, uint32_t tag) {
    struct epoll_event event = { .events = events, .data = { .u64 = ((uint64_t)tag << 32) | (uint32_t)fd } };
    if (epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event) == 0) return 0;
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
}

/// Stops watching `fd`.
static inline int herald_epoll_remove(int epoll, int fd) {
    return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, 0);
}

/// `struct epoll_event` is packed on x86_64: read entries in C, where the layout is the compiler's business.
static inline uint32_t herald_epoll_event_flags(const struct epoll_event *events, int index) {
    return events[index].events;
}

static inline int herald_epoll_event_fd(const struct epoll_event *events, int index) {
    return (int)(uint32_t)events[index].data.u64;
}

static inline uint32_t herald_epoll_event_tag(const struct epoll_event *events, int index) {
    return (uint32_t)(events[index].data.u64 >> 32);
}

#endif
