#ifndef HERALD_CCURLFIXES_H
#define HERALD_CCURLFIXES_H

// An epoll set and an eventfd for the sender pool's loop (poller.c), declared without <sys/epoll.h> so that
// Swift code importing this next to another module that includes it sees no second copy of epoll's types.

/// A new epoll set (close-on-exec), or -1 with errno.
int herald_poller_create(void);

/// Watches `fd` for `what`, libcurl's CURL_POLL_IN (1), CURL_POLL_OUT (2), CURL_POLL_INOUT (3), or stops
/// watching it for CURL_POLL_REMOVE (4). Returns 0, or -1 with errno.
int herald_poller_watch(int poller, int fd, int what);

/// Waits up to `timeout_millis` (-1: no limit) for events; writes each ready descriptor and its readiness as
/// libcurl's CURL_CSELECT_IN (1) | CURL_CSELECT_OUT (2) | CURL_CSELECT_ERR (4) bits. Returns the count (0 on
/// timeout or EINTR), or -1 with errno.
int herald_poller_wait(int poller, int *fds, int *bits, int capacity, int timeout_millis);

/// A non-blocking, close-on-exec eventfd, or -1 with errno.
int herald_wakeup_create(void);

/// Makes the eventfd readable; any thread.
void herald_wakeup_signal(int fd);

/// Reads the eventfd back to not readable.
void herald_wakeup_drain(int fd);

#endif
