#include <curl/curl.h>

// curl_version_info(3): the running libcurl, asked with the struct layout of these headers
// (CURLVERSION_NOW is a macro aliasing one of the CURLversion constants).
static inline const char *dray_curl_version(void) {
  return curl_version_info(CURLVERSION_NOW)->version;
}

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call. These typed
// wrappers give each argument kind its own entry point, as swift-corelibs-foundation does.

typedef size_t (*dray_curl_data_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*dray_curl_xferinfo_callback)(void *context, curl_off_t dltotal, curl_off_t dlnow,
                                           curl_off_t ultotal, curl_off_t ulnow);
typedef int (*dray_curl_seek_callback)(void *context, curl_off_t offset, int origin);

static inline CURLcode dray_curl_setopt_long(CURL *h, CURLoption o, long v) {
  return curl_easy_setopt(h, o, v);
}
static inline CURLcode dray_curl_setopt_off(CURL *h, CURLoption o, curl_off_t v) {
  return curl_easy_setopt(h, o, v);
}
static inline CURLcode dray_curl_setopt_string(CURL *h, CURLoption o, const char *v) {
  return curl_easy_setopt(h, o, v);
}
static inline CURLcode dray_curl_setopt_pointer(CURL *h, CURLoption o, void *v) {
  return curl_easy_setopt(h, o, v);
}
static inline CURLcode dray_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) {
  return curl_easy_setopt(h, o, v);
}
static inline CURLcode dray_curl_setopt_data_callback(CURL *h, CURLoption o, dray_curl_data_callback v) {
  return curl_easy_setopt(h, o, v);
}
static inline CURLcode dray_curl_setopt_xferinfo_callback(CURL *h, dray_curl_xferinfo_callback v) {
  return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, v);
}
typedef curl_socket_t (*dray_curl_opensocket_callback)(void *context, curlsocktype purpose, struct curl_sockaddr *address);
static inline CURLcode dray_curl_setopt_opensocket_callback(CURL *h, dray_curl_opensocket_callback v) {
  return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, v);
}
static inline CURLcode dray_curl_setopt_seek_callback(CURL *h, dray_curl_seek_callback v) {
  return curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, v);
}
static inline CURLcode dray_curl_getinfo_long(CURL *h, CURLINFO i, long *v) {
  return curl_easy_getinfo(h, i, v);
}
static inline CURLcode dray_curl_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) {
  return curl_easy_getinfo(h, i, v);
}
static inline CURLcode dray_curl_getinfo_string(CURL *h, CURLINFO i, char **v) {
  return curl_easy_getinfo(h, i, v);
}
