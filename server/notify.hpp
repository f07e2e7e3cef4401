#pragma once
// systemd's service notification protocol (Type=notify), through libsystemd's
// sd_notify: READY=1 once the listeners are open, RELOADING=1 ... READY=1
// around a reload, STOPPING=1 when the drain begins. Without NOTIFY_SOCKET in
// the environment (not started by systemd) every call is a no-op.

#include <string_view>

namespace wirepool::server {

/// The listeners are open: `status` is the one-line STATUS= systemctl shows.
void notify_ready(std::string_view status);
/// A reload began (notify_ready() ends it, whatever its outcome).
void notify_reloading();
/// The drain began.
void notify_stopping();

}  // namespace wirepool::server
