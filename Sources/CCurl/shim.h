#ifndef HERALD_CCURL_SHIM_H
#define HERALD_CCURL_SHIM_H

#include <curl/curl.h>
#include <sys/socket.h>
#include <unistd.h>

// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic: the argument must have
// exactly the type the option expects, so each argument kind gets its own typed wrapper.

static inline CURLcode herald_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode herald_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode herald_curl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode herald_curl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode herald_curl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

typedef size_t (*herald_curl_data_callback)(char *buffer, size_t size, size_t count, void *context);

static inline CURLcode herald_curl_easy_setopt_write_function(CURL *handle, herald_curl_data_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

static inline CURLcode herald_curl_easy_setopt_header_function(CURL *handle, herald_curl_data_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}

typedef int (*herald_curl_prereq_callback)(void *context, char *primary_ip, char *local_ip, int primary_port,
                                           int local_port);

static inline CURLcode herald_curl_easy_setopt_prereq_function(CURL *handle, herald_curl_prereq_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, callback);
}

// Connection counting: every socket libcurl opens or closes for a transfer goes through these two, with the
// counter of the transfer's origin as context, which counts the origin's sockets and the pool's. libcurl copies both
// callbacks into the connection when it makes it, so the close is counted even when another transfer (or
// curl_multi_cleanup) closes the connection.

/// The sockets open to one origin (only the pool's loop thread reads it) and a pointer to the pool's total (read
/// from any thread).
typedef struct herald_socket_counter {
    long *pool;
    long origin;
} herald_socket_counter;

static inline curl_socket_t herald_curl_open_counted_socket(void *context, curlsocktype purpose,
                                                            struct curl_sockaddr *address) {
    (void)purpose;
    herald_socket_counter *counter = context;
    curl_socket_t fd = socket(address->family, address->socktype, address->protocol);
    if (fd != CURL_SOCKET_BAD) {
        __atomic_fetch_add(counter->pool, 1, __ATOMIC_RELAXED);
        counter->origin += 1;
    }
    return fd;
}

static inline int herald_curl_close_counted_socket(void *context, curl_socket_t fd) {
    herald_socket_counter *counter = context;
    __atomic_fetch_sub(counter->pool, 1, __ATOMIC_RELAXED);
    counter->origin -= 1;
    return close(fd);
}

typedef curl_socket_t (*herald_curl_opensocket_callback)(void *context, curlsocktype purpose,
                                                         struct curl_sockaddr *address);

/// Makes `handle` open its sockets through `open` (with `context`) instead, which decides whether the address may be
/// connected to and then opens it with `herald_curl_open_counted_socket`, or returns CURL_SOCKET_BAD. Set after
/// `herald_curl_easy_count_sockets`, whose close callback goes on counting.
static inline CURLcode herald_curl_easy_open_sockets_through(CURL *handle, herald_curl_opensocket_callback open,
                                                             void *context) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, open);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETDATA, context);
    return code;
}

static inline long herald_load_counter(const long *counter) {
    return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

/// Makes `handle` count its sockets in `*counter`, which must outlive every connection it opens.
static inline CURLcode herald_curl_easy_count_sockets(CURL *handle, herald_socket_counter *counter) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, herald_curl_open_counted_socket);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETDATA, (void *)counter);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETFUNCTION, herald_curl_close_counted_socket);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETDATA, (void *)counter);
    return code;
}

static inline CURLcode herald_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode herald_curl_easy_getinfo_double(CURL *handle, CURLINFO info, double *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode herald_curl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

typedef int (*herald_curl_socket_callback)(CURL *easy, curl_socket_t fd, int what, void *context, void *socket_context);
typedef int (*herald_curl_timer_callback)(CURLM *multi, long timeout_millis, void *context);

/// Routes the multi handle's socket and timer callbacks (curl_multi_socket_action's interface) to `context`.
static inline CURLMcode herald_curl_multi_set_event_callbacks(CURLM *handle, herald_curl_socket_callback sockets,
                                                              herald_curl_timer_callback timer, void *context) {
    CURLMcode code = curl_multi_setopt(handle, CURLMOPT_SOCKETFUNCTION, sockets);
    if (code == CURLM_OK) code = curl_multi_setopt(handle, CURLMOPT_SOCKETDATA, context);
    if (code == CURLM_OK) code = curl_multi_setopt(handle, CURLMOPT_TIMERFUNCTION, timer);
    if (code == CURLM_OK) code = curl_multi_setopt(handle, CURLMOPT_TIMERDATA, context);
    return code;
}

static inline CURLMcode herald_curl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

#endif
