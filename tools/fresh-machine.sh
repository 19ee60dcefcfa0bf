#!/bin/sh
# fresh-machine.sh (make fresh-check): run `make demo` and `make test` the way a
# new user would, on a Debian bookworm that has never seen this project.
#
# It debootstraps a minimal bookworm (minbase plus build-essential, git,
# python3 and netlib's libblas-dev, as the project's machine image has it: no
# OpenBLAS, no MPI) into a folder, clones this repository's HEAD into it (the
# committed tree only: uncommitted changes are not tested, and nothing outside
# the repository comes along), and runs `make demo` then `make test` there as
# root in a chroot. Needs root; installs debootstrap when missing.
#
#   FRESH_DIR=/var/tmp/shardc-fresh   the chroot (removed and made anew)
#   FRESH_CACHE=/var/tmp/shardc-fresh-base.tgz
#                                     the debootstrapped base, kept for the next
#                                     run (debootstrap is the slow step); delete
#                                     it to debootstrap again
#   FRESH_MIRROR=http://deb.debian.org/debian
#   FRESH_COMMANDS='make demo && make test'
set -eu
dir=${FRESH_DIR:-/var/tmp/shardc-fresh}
cache=${FRESH_CACHE:-/var/tmp/shardc-fresh-base.tgz}
mirror=${FRESH_MIRROR:-http://deb.debian.org/debian}
commands=${FRESH_COMMANDS:-make demo && make test}
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)

say() { echo "fresh-check: $*"; }
[ "$(id -u)" = 0 ] || { echo "fresh-check: needs root (debootstrap, chroot, mount)" >&2; exit 1; }
case $dir in /|"") echo "fresh-check: refusing FRESH_DIR='$dir'" >&2; exit 1 ;; esac
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
	say "note: uncommitted changes are not tested (the chroot gets a clone of HEAD)"
fi

mounted=""
unmount_all() {
	for m in $mounted; do umount -l "$m" 2>/dev/null || true; done
	mounted=""
}
trap unmount_all EXIT INT TERM

rm -rf "$dir"
mkdir -p "$dir"
if [ -s "$cache" ]; then
	say "base system from $cache"
	tar -xzf "$cache" -C "$dir"
else
	command -v debootstrap >/dev/null 2>&1 || {
		say "installing debootstrap"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null
	}
	say "debootstrap bookworm (minbase + build-essential git python3 libblas-dev) into $dir"
	debootstrap --variant=minbase --include=build-essential,git,python3,libblas-dev,ca-certificates \
		bookworm "$dir" "$mirror" >"$dir.debootstrap.log" 2>&1 ||
		{ tail -n 20 "$dir.debootstrap.log" >&2; exit 1; }
	tar -czf "$cache.tmp" -C "$dir" . && mv "$cache.tmp" "$cache"
fi
cp /etc/resolv.conf "$dir/etc/resolv.conf"
# debootstrap writes no /etc/hosts: without it every mpirun looks the host's
# name up over DNS and waits for the timeout (e2e ran 10x slower)
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$(hostname)" \
	>"$dir/etc/hosts"

say "cloning $(git -C "$repo" rev-parse --short HEAD) ($(git -C "$repo" log -1 --format=%s | cut -c1-60))"
git clone -q --no-local "$repo" "$dir/root/shardc"

for m in proc sys dev dev/pts dev/shm; do
	mkdir -p "$dir/$m"
	case $m in
	proc) mount -t proc proc "$dir/proc" ;;
	sys) mount -t sysfs sys "$dir/sys" ;;
	dev) mount --bind /dev "$dir/dev" ;;
	dev/pts) mount -t devpts devpts "$dir/dev/pts" ;;
	dev/shm) mount -t tmpfs -o size=2g shm "$dir/dev/shm" ;;
	esac
	mounted="$dir/$m $mounted"
done

say "running: $commands"
start=$(date +%s)
set +e
chroot "$dir" /usr/bin/env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	/bin/sh -c "cd /root/shardc && $commands" >"$dir.log" 2>&1
rc=$?
set -e
tail -n 25 "$dir.log"
say "exit $rc after $(( $(date +%s) - start )) s; whole log in $dir.log"
exit $rc
