#pragma once
// A backend's train in the relay's pipeline (server/pg_relay.hpp), as the
// session layer and the backend pool see it: nothing of the front end.

#include <string_view>

namespace wirepool::server {

struct Backend;

/// The owner of a backend's train: the RelayPath of the event loop whose
/// session holds the backend. Touched only on that loop.
class TrainOwner {
 public:
  /// A cancel names the connection, not the statement: false while other
  /// clients' batches are pipelined behind the running one.
  virtual bool may_cancel(const Backend& b) const = 0;
  /// `b`'s lease ends other than at a batch's end: no more batches join, and
  /// the clients whose batches follow get an error (`why`). False when there
  /// were such batches (the connection's stream is then unusable).
  virtual bool release(Backend& b, std::string_view why) = 0;

 protected:
  ~TrainOwner() = default;
};

}  // namespace wirepool::server
