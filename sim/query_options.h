// The query parameters of the API's requests, read the way kube-apiserver reads them: its
// parameter codec converts url.Values into ListOptions, DeleteOptions and PatchOptions
// with apimachinery's pkg/runtime/conversion.go, and a conversion error is a 400
// BadRequest whose message is the error itself (endpoints/handlers: NewBadRequest(err)).
//
// Modelled, for every boolean and integer parameter the sim reads:
//  - booleans (watch, allowWatchBookmarks, sendInitialEvents, orphanDependents; also
//    PatchOptions.force upstream, which the sim has no use for and, never failing, skips):
//    absent is false (nullopt for the pointer fields); "0" and "false" in any letter case
//    are false; every other value is true, the empty one ("?watch", "?watch=") included.
//    Never an error: "watch=True" (the Python client), "watch=1" (client-go) and
//    "watch=yes" all watch. (Not Go's strconv.ParseBool: the codec does not use it.)
//  - integers (limit, timeoutSeconds, gracePeriodSeconds): strconv.ParseInt(v, 10, 64),
//    i.e. an optional sign and decimal digits within int64. Anything else, the empty value
//    included, is 400 `strconv.ParseInt: parsing "x": invalid syntax` (or `value out of
//    range`). A negative limit is no limit, as upstream's storage reads it.
//  - a repeated parameter: the first value counts.
//  - each verb reads only its own options: a GET of one object ignores `limit`; a DELETE
//    with a body reads DeleteOptions from the body and ignores the query.
// Shortcut: the string parameters (labelSelector, continue, resourceVersion, ...) are
// read where they are used.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/http.h"

namespace commgate::sim {

// runtime.Convert_Slice_string_To_bool on a value that is present.
bool go_query_bool(std::string_view value);

// strconv.ParseInt(text, 10, 64): the value, or Go's error message.
struct GoInt64 {
  std::optional<int64_t> value;
  std::string error;  // "" when value is set
};
GoInt64 go_parse_int64(std::string_view text);

// On a request. query_int64 throws ApiError 400 BadRequest with Go's message.
bool query_bool(const server::Request& request, std::string_view name);
std::optional<bool> query_optional_bool(const server::Request& request, std::string_view name);
std::optional<int64_t> query_int64(const server::Request& request, std::string_view name);

// The typed fields of metav1.ListOptions, for list, watch and deletecollection.
struct ListQuery {
  bool watch = false;
  bool allow_watch_bookmarks = false;
  std::optional<bool> send_initial_events;
  std::optional<int64_t> timeout_seconds;
  int64_t limit = 0;  // <= 0: no limit
};
ListQuery decode_list_query(const server::Request& request);

// The typed fields of metav1.DeleteOptions read from the query (a DELETE without a body).
struct DeleteQuery {
  std::optional<int64_t> grace_period_seconds;
  std::optional<bool> orphan_dependents;
};
DeleteQuery decode_delete_query(const server::Request& request);

}  // namespace commgate::sim
