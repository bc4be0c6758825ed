// The sender pool's event loop: epoll and eventfd, for libcurl's socket interface (curl_multi_socket_action).
// See CCurlFixes.h.

#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "CCurlFixes.h"

int herald_poller_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int herald_poller_watch(int poller, int fd, int what) {
    if (what == 4) {  // CURL_POLL_REMOVE; the descriptor may already be closed, which removed it anyway.
        if (epoll_ctl(poller, EPOLL_CTL_DEL, fd, NULL) == 0 || errno == EBADF || errno == ENOENT) return 0;
        return -1;
    }
    struct epoll_event event = { .events = 0, .data = { .fd = fd } };
    if (what & 1) event.events |= EPOLLIN;
    if (what & 2) event.events |= EPOLLOUT;
    if (epoll_ctl(poller, EPOLL_CTL_MOD, fd, &event) == 0) return 0;
    if (errno != ENOENT) return -1;
    return epoll_ctl(poller, EPOLL_CTL_ADD, fd, &event);
}

int herald_poller_wait(int poller, int *fds, int *bits, int capacity, int timeout_millis) {
    struct epoll_event events[256];
    if (capacity > 256) capacity = 256;
    int count = epoll_wait(poller, events, capacity, timeout_millis);
    if (count < 0) return errno == EINTR ? 0 : -1;
    for (int index = 0; index < count; index++) {
        uint32_t flags = events[index].events;
        fds[index] = events[index].data.fd;
        bits[index] = ((flags & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) ? 1 : 0) | ((flags & EPOLLOUT) ? 2 : 0)
            | ((flags & EPOLLERR) ? 4 : 0);
    }
    return count;
}

int herald_wakeup_create(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

void herald_wakeup_signal(int fd) {
    uint64_t one = 1;
    // EAGAIN means the counter is already non-zero: the loop will wake anyway.
    (void)!write(fd, &one, sizeof one);
}

void herald_wakeup_drain(int fd) {
    uint64_t value;
    (void)!read(fd, &value, sizeof value);
}
