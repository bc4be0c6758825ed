// HTTP requests to FCM over libcurl multi.
