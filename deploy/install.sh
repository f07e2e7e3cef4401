#!/bin/sh
# Installs a built wirepool into DESTDIR (default /): the same steps the
# container image runs (deploy/docker/Dockerfile) and a host install follows.
#   deploy/install.sh build/release/wirepool [DESTDIR]
# Installs /usr/bin/wirepool, the systemd unit, the operations guide and an
# example configuration; never overwrites /etc/wirepool/wirepool.yaml.
set -eu
bin=${1:?usage: install.sh BINARY [DESTDIR]}
dest=${2:-}
src=$(cd "$(dirname "$0")/.." && pwd)
install -D -m 0755 "$bin" "$dest/usr/bin/wirepool"
install -D -m 0644 "$src/deploy/systemd/wirepool.service" "$dest/lib/systemd/system/wirepool.service"
install -D -m 0644 "$src/docs/operations.md" "$dest/usr/share/doc/wirepool/operations.md"
install -D -m 0644 "$src/deploy/docker/wirepool.yaml" "$dest/usr/share/doc/wirepool/wirepool.example.yaml"
install -d -m 0755 "$dest/etc/wirepool"
install -d -m 0750 "$dest/var/lib/wirepool"
