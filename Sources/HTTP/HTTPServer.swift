// The HTTP/1.1 server on POSIX sockets.
