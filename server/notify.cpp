#include "server/notify.hpp"

#include <systemd/sd-daemon.h>

#include <chrono>
#include <string>

namespace wirepool::server {

namespace {
void send(const std::string& state) {
  // 0: keep NOTIFY_SOCKET in the environment (a reload notifies again).
  (void)sd_notify(0, state.c_str());
}
}  // namespace

void notify_ready(std::string_view status) {
  send("READY=1\nSTATUS=" + std::string(status));
}

void notify_reloading() {
  // MONOTONIC_USEC lets systemd (253+, Type=notify-reload) match the reload
  // to its request; older versions ignore it.
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                std::chrono::steady_clock::now().time_since_epoch())
                .count();
  send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(us));
}

void notify_stopping() {
  send("STOPPING=1\nSTATUS=draining");
}

}  // namespace wirepool::server
