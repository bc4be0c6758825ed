#ifndef HERALD_CNGHTTP2_SHIM_H
#define HERALD_CNGHTTP2_SHIM_H

// libnghttp2, the reference HTTP/2 implementation (framing, HPACK, flow control), for Herald's own HTTP/2 client
// (Send/HTTP2). Herald drives its client session from its own loop: bytes in through nghttp2_session_mem_recv,
// bytes out through nghttp2_session_mem_send; nghttp2 never touches a socket.

#include <nghttp2/nghttp2.h>

#endif
