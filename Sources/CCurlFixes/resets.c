// libcurl 7.88 (Debian 12's) sends an RST_STREAM for every HTTP/2 stream it completes, although the stream is
// already closed: http2_handle_stream_close() sets `stream->closed = FALSE` "to prevent an infinite loop", and
// http2_data_done() then resets every stream that is "not closed". curl 8.1 rewrote that code and no longer does.
//
// A server built on nghttp2 >= 1.57 (node's http2 module, nghttpx, and others with the "rapid reset" mitigation
// of CVE-2023-44487) counts every RST_STREAM it receives, for closed streams too, and answers ~1,000 of them
// (plus ~33/s) with GOAWAY(INTERNAL_ERROR). At thousands of sends per second that kills a connection every
// fraction of a second: new TLS handshakes, requests in flight lost with it, and libcurl re-sending them.
//
// libcurl calls nghttp2_submit_rst_stream() through the dynamic linker, so this definition, exported from the
// executable (see Package.swift), takes its place: it drops the reset when nghttp2 no longer has the stream open
// (already closed, or closed and retained for the priority tree), and passes every other one to the real
// function, so a transfer cancelled or timed out before its stream ended is still reset as it must be.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "CCurlFixes.h"

// From <nghttp2/nghttp2.h>, declared here so that building needs no nghttp2 headers: the functions are looked
// up at run time in the libnghttp2 that libcurl loaded.
typedef struct nghttp2_session nghttp2_session;
typedef struct nghttp2_stream nghttp2_stream;
enum { herald_nghttp2_stream_state_closed = 7 };  // NGHTTP2_STREAM_STATE_CLOSED

typedef int (*submit_rst_stream_fn)(nghttp2_session *, uint8_t, int32_t, uint32_t);
typedef nghttp2_stream *(*find_stream_fn)(nghttp2_session *, int32_t);
typedef int (*stream_state_fn)(nghttp2_stream *);

static submit_rst_stream_fn real_submit_rst_stream;
static find_stream_fn find_stream;
static stream_state_fn stream_state;
static pthread_once_t lookup_once = PTHREAD_ONCE_INIT;
static atomic_ulong skipped_resets;

static void look_up(void) {
    real_submit_rst_stream = (submit_rst_stream_fn)dlsym(RTLD_NEXT, "nghttp2_submit_rst_stream");
    find_stream = (find_stream_fn)dlsym(RTLD_NEXT, "nghttp2_session_find_stream");
    stream_state = (stream_state_fn)dlsym(RTLD_NEXT, "nghttp2_stream_get_state");
}

int nghttp2_submit_rst_stream(nghttp2_session *session, uint8_t flags, int32_t stream_id, uint32_t error_code) {
    pthread_once(&lookup_once, look_up);
    if (find_stream != NULL && stream_state != NULL && stream_id > 0) {
        nghttp2_stream *stream = find_stream(session, stream_id);
        if (stream == NULL || stream_state(stream) == herald_nghttp2_stream_state_closed) {
            atomic_fetch_add_explicit(&skipped_resets, 1, memory_order_relaxed);
            return 0;
        }
    }
    if (real_submit_rst_stream == NULL) return -501;  // NGHTTP2_ERR_INVALID_ARGUMENT; unreachable in practice
    return real_submit_rst_stream(session, flags, stream_id, error_code);
}

unsigned long herald_curl_skipped_stream_resets(void) {
    return atomic_load_explicit(&skipped_resets, memory_order_relaxed);
}
