#pragma once
// The HTTP listener (`protocol: http`): GET /metrics (Prometheus text format
// 0.0.4), /healthz (the process answers), /readyz (listeners open and every
// pool able to reach its backend, or not yet tried). Anything else is 404.
//
// One request per connection (`Connection: close`): scrapers and probes open a
// connection per request anyway, and it keeps an HTTP client from holding a
// connection open. The request is bounded in size (kHttpHeaderLimit, no body)
// and in time (kHttpTimeout for reading it and writing the answer).

#include <chrono>
#include <string>

#include "server/server.hpp"

namespace wirepool::server {

/// The request line and headers together, at most; a body is refused (400).
inline constexpr size_t kHttpHeaderLimit = 8 * 1024;
/// From accept to the last byte of the answer.
inline constexpr auto kHttpTimeout = std::chrono::seconds(10);

/// Serves one HTTP connection on `socket`'s event loop; `ticket` (its place
/// among the pending connections) is given back when it ends. The listener's
/// allow-list was checked at accept.
void start_http(Server& server, ClientSocket socket, Admission::TicketPtr ticket);

/// The /metrics body.
std::string render_metrics(const Server& server);
/// True when ready; otherwise `reason` says why (for /readyz's JSON).
bool is_ready(const Server& server, std::string* reason);

}  // namespace wirepool::server
