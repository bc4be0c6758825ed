#ifndef HERALD_CCURLFIXES_H
#define HERALD_CCURLFIXES_H

/// RST_STREAM frames libcurl asked for on HTTP/2 streams that were already closed, and that were not sent
/// (see resets.c). Any thread.
unsigned long herald_curl_skipped_stream_resets(void);

#endif
