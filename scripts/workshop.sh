#!/usr/bin/env bash
# A workshop on one machine: JupyterHub serving the course to N learners, each with their own
# copy of labs/ and the course's environment. Installs what it needs (idempotent), then runs
# the hub in the foreground; Ctrl-C stops it and every learner's server.
# 在一台机器上办工作坊：JupyterHub 为 N 名学员提供课程，每人一份自己的 labs/ 副本和相同的环境。
# 会先安装所需的软件（可重复运行），然后在前台运行；按 Ctrl-C 停止 hub 及所有学员的服务器。
#
#   bash scripts/workshop.sh --learners N [--port P] [--lang en|zh|both]
#                            [--listen ADDRESS] [--dir PATH] [--no-setup] [--trusted-room]
#   bash scripts/workshop.sh --remove-users
#
#   --learners N   learner01 ... learnerNN may log in (1-500)
#   --port P       the port learners open (default 8000)
#   --lang         the room's language (default $FXCOURSE_LANG, else both), as in course.sh
#   --listen ADDR  the address to listen on (default 127.0.0.1: this machine only); e.g.
#                  --listen 0.0.0.0 to serve the room's network (plain HTTP: see the warning)
#   --dir PATH     the workshop's folder: learners' work and the hub's state (default workshop/)
#   --no-setup     skip scripts/setup.sh (the environment is already set up)
#   --trusted-room run as an ordinary user AND listen beyond this machine, accepting that any
#                  learner can read and change every learner's work and become the instructor
#   --remove-users remove the Unix users an earlier run as root made (their folders stay)
#
# Run as root, each learner (and the instructor) gets a Unix user of their own, made here, and
# their server runs as that user: learners cannot reach each other's folders, the hub's state
# or its secrets, and no server runs as root. Run as an ordinary user, every server runs as
# that user and learners are NOT kept apart (said at start).
# 以 root 运行时，每名学员（和讲师）都有自己的 Unix 用户，服务器以该用户身份运行，学员之间、学员与
# hub 的状态和密钥之间彼此隔离；以普通用户运行时，所有服务器都以该用户身份运行，学员之间没有隔离。
#
# The workshop code learners type is $FXCOURSE_WORKSHOP_CODE, else the one kept in
# <dir>/hub/workshop-code (made on the first run); the instructor's password is
# $FXCOURSE_INSTRUCTOR_PASSWORD, else a new one each start. Both are printed once, here.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# Pins for the hub and its proxy (the Python configurable-http-proxy: no Node.js), also pinned in
# pyproject.toml, so set-up (or a wheelhouse) installs them; the check below covers --no-setup on
# an older .venv.
JUPYTERHUB_VERSION=6.1.1
CHP_VERSION=0.4.0

die() { printf 'workshop.sh: %s\n' "$*" >&2; exit 2; }
say() { printf '[workshop] %s\n' "$*"; }
learners="" port=8000 lang="${FXCOURSE_LANG:-both}" listen=127.0.0.1 dir="$root/workshop" setup=1
trusted=0 remove=0
MARKER="fxcourse workshop"  # the comment field of every Unix user this script makes
while [ "$#" -gt 0 ]; do
  case "$1" in
    --learners|--port|--lang|--listen|--dir)
      [ "$#" -ge 2 ] || die "$1 needs a value / $1 需要一个值"
      case "$1" in
        --learners) learners="$2" ;; --port) port="$2" ;; --lang) lang="$2" ;;
        --listen) listen="$2" ;; --dir) dir="$2" ;;
      esac
      shift ;;
    --learners=*) learners="${1#*=}" ;;
    --port=*) port="${1#*=}" ;;
    --lang=*) lang="${1#*=}" ;;
    --listen=*) listen="${1#*=}" ;;
    --dir=*) dir="${1#*=}" ;;
    --no-setup) setup=0 ;;
    --trusted-room) trusted=1 ;;
    --remove-users) remove=1 ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help) / 未知选项 $1" ;;
  esac
  shift
done
ours() {  # the users an earlier run made: their comment field is the marker
  getent passwd | awk -F: -v m="$MARKER" '$5 == m && $3 != 0 {print $1}'
}
if [ "$remove" = 1 ]; then
  [ "$(id -u)" = 0 ] || die "--remove-users needs root / --remove-users 需要 root"
  for name in $(ours); do userdel "$name" && say "removed the user $name / 已删除用户 $name"; done
  exit 0
fi
[ -n "$learners" ] || die "--learners N is required, e.g. --learners 30 / 需要 --learners N"
case "$learners" in ''|*[!0-9]*) die "--learners takes a number, not '$learners' / --learners 需要一个数字" ;; esac
[ "$learners" -ge 1 ] && [ "$learners" -le 500 ] || die "--learners takes 1-500, not $learners"
case "$port" in ''|*[!0-9]*) die "--port takes a number, not '$port'" ;; esac
case "$lang" in en|zh|both) ;; *) die "--lang takes en, zh or both, not '$lang' / --lang 需要 en、zh 或 both" ;; esac
case "$dir" in /*) ;; *) dir="$root/$dir" ;; esac

# 1. The course's environment, then the hub: jupyterhub and its proxy in .venv (from the
#    wheelhouse when setup.sh finds one: no network needed).
[ "$setup" = 1 ] && bash scripts/setup.sh
py=.venv/bin/python
if ! "$py" - "$JUPYTERHUB_VERSION" "$CHP_VERSION" 2>/dev/null <<'PY'
import sys
from importlib.metadata import version
sys.exit((version("jupyterhub"), version("configurable-http-proxy")) != tuple(sys.argv[1:3]))
PY
then
  say "installing jupyterhub $JUPYTERHUB_VERSION and configurable-http-proxy $CHP_VERSION / 安装 jupyterhub 及其代理"
  "$py" -m pip install -q "jupyterhub==$JUPYTERHUB_VERSION" "configurable-http-proxy==$CHP_VERSION"
fi

# 2. The workshop code (kept, so a restarted hub lets the room back in) and the instructor's
#    password (never written down). Readable by this user only (root: no learner).
mkdir -p "$dir/hub" "$dir/learners"
chmod 700 "$dir/hub"
umask 077
new_secret() { "$py" -c 'import secrets, sys
abc = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: easy to copy from a board
n = int(sys.argv[1]); print("-".join("".join(secrets.choice(abc) for _ in range(4)) for _ in range(n)))' "$1"; }
if [ -n "${FXCOURSE_WORKSHOP_CODE:-}" ]; then
  code="$FXCOURSE_WORKSHOP_CODE"
elif [ -s "$dir/hub/workshop-code" ]; then
  code=$(cat "$dir/hub/workshop-code")
else
  code=$(new_secret 3)
  printf '%s\n' "$code" > "$dir/hub/workshop-code"
fi
[ "${#code}" -ge 8 ] || die "the workshop code needs 8 characters or more / 工作坊口令至少 8 个字符"
instructor_password="${FXCOURSE_INSTRUCTOR_PASSWORD:-$(new_secret 8)}"
[ "${#instructor_password}" -ge 32 ] || die "FXCOURSE_INSTRUCTOR_PASSWORD needs 32 characters or more"
[ "$instructor_password" != "$code" ] || die "the instructor's password must differ from the workshop code"
umask 022

# 3. Room for everyone? Measured with 3 learners after lab 00's checks: hub + proxy ~0.2 GB,
#    each learner ~0.55 GB (server + one kernel, shared pages split); heavier labs' kernels
#    peak at 0.75-1 GB, so plan 1 GB per learner. Nothing enforces it per learner: warn here.
"$py" - "$learners" <<'PY' || true
import sys
n = int(sys.argv[1])
try:
    meminfo = dict(line.split(":", 1) for line in open("/proc/meminfo"))
    available = int(meminfo["MemAvailable"].split()[0]) / 2**20
except (OSError, KeyError, ValueError):
    sys.exit(0)  # not Linux: no check
need = 0.3 + 1.0 * n
if available < need:
    print(f"[workshop] WARNING: {available:.1f} GB of memory is available; {n} learners need about "
          f"{need:.0f} GB (1 GB each). Kernels may be killed when memory runs out. "
          f"/ 警告：可用内存 {available:.1f} GB，{n} 名学员约需 {need:.0f} GB（每人 1 GB）")
PY

# 4. Who is kept apart from whom. As root: a Unix user per person, made here (and checked: a
#    user of that name that this script did not make is never taken over). Otherwise: say
#    plainly what every learner can do, and serve only this machine unless --trusted-room.
loopback=0
case "$listen" in 127.0.0.1|localhost|::1) loopback=1 ;; esac
names() { "$py" -c 'import sys; w = max(2, len(sys.argv[1]))
print(" ".join(f"learner{i:0{w}d}" for i in range(1, int(sys.argv[1]) + 1)))' "$learners"; }
learner_python=""
if [ "$(id -u)" = 0 ]; then
  users=1
  command -v useradd >/dev/null 2>&1 || die "useradd is needed to give each learner a Unix user / 需要 useradd"
  chmod 711 "$dir" && mkdir -p "$dir/learners" && chmod 711 "$dir/learners"
  for name in $(names) instructor; do
    if [ "$name" = instructor ]; then home="$dir/instructor"; else home="$dir/learners/$name"; fi
    entry=$(getent passwd "$name" || true)
    if [ -z "$entry" ]; then
      useradd --system --user-group --no-create-home --home-dir "$home" --shell /usr/sbin/nologin \
        --comment "$MARKER" "$name"
    else
      [ "$(printf '%s' "$entry" | cut -d: -f5)" = "$MARKER" ] \
        || die "a user named $name exists and was not made by this script; remove or rename it first / 已存在不是本脚本创建的用户 $name"
      [ "$(printf '%s' "$entry" | cut -d: -f3)" != 0 ] || die "$name has uid 0 / $name 的 uid 是 0"
      [ "$(printf '%s' "$entry" | cut -d: -f6)" = "$home" ] || usermod --home "$home" "$name"
    fi
    [ ! -L "$home" ] || die "$home is a link; a learner's folder must be a real folder / $home 是链接"
    mkdir -p "$home"
    chown -R -P -h "$name:$name" "$home"  # never follows a link a learner left in their folder
    chmod 700 "$home"
  done
  # Every person's server runs the course's environment as that person. When the course's own
  # interpreter sits in a folder other users cannot enter (a Python built under /root), they run
  # a view of .venv: the system's Python of the same version, with .venv's packages (python/).
  learner_python="$root/.venv/bin/python"
  can_run() { (cd / && runuser -u learner01 -- "$1" -c "import fxcourse, jupyterhub, torch") >/dev/null 2>&1; }
  if ! can_run "$learner_python"; then
    minor=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    view="$dir/python"
    [ ! -L "$view" ] || die "$view is a link / $view 是链接"
    rm -rf "$view"
    for base in "/usr/bin/python$minor" "/usr/local/bin/python$minor"; do
      [ -x "$base" ] || continue
      mkdir -p "$view/bin" "$view/lib/python$minor"
      ln -s "$base" "$view/bin/python" && ln -s python "$view/bin/python3"
      ln -s "$root/.venv/lib/python$minor/site-packages" "$view/lib/python$minor/site-packages"
      ln -s "$root/.venv/share" "$view/share" && ln -s "$root/.venv/etc" "$view/etc"
      printf 'home = %s\ninclude-system-site-packages = false\n' "$(dirname "$base")" > "$view/pyvenv.cfg"
      chmod -R a+rX "$view" && chmod 755 "$dir"
      learner_python="$view/bin/python"
      break
    done
    can_run "$learner_python" \
      || die "the learners' users cannot run the course's Python ($root/.venv) or cannot enter $dir: put the course and the workshop folder where every user can read them (e.g. /opt/fxcourse), built with a Python every user can run / 学员用户无法运行课程的 Python 或进入 $dir；请把课程和工作坊文件夹放在所有用户都能读取的位置（例如 /opt/fxcourse）"
  fi
  say "each learner and the instructor has a Unix user of their own (remove them later: --remove-users)"
  say "每名学员和讲师都有自己的 Unix 用户（之后可用 --remove-users 删除）"
else
  users=0
  say "WARNING: not run as root, so every learner's server and kernel runs as $(id -un), the hub's"
  say "  own user: any learner's code can read and change every other learner's work and read the"
  say "  instructor's password and the hub's tokens (becoming the instructor). Run as root to give"
  say "  each learner a Unix user of their own."
  say "警告：没有以 root 运行，所有学员的服务器和内核都以 hub 自己的用户 $(id -un) 运行：任何学员的代码"
  say "  都能读取并修改其他学员的作业，还能读到讲师密码和 hub 的令牌（从而成为讲师）。以 root 运行可让每名学员拥有自己的 Unix 用户。"
  if [ "$loopback" = 0 ] && [ "$trusted" = 0 ]; then
    die "--listen $listen would serve this to the room while learners are not kept apart; run as root, or add --trusted-room to accept it / 学员之间没有隔离，拒绝监听 $listen；请以 root 运行，或加 --trusted-room 表示接受"
  fi
fi
host="$listen"
if [ "$loopback" = 0 ]; then
  say "WARNING: listening on $listen: anyone on this network can reach the login page, and"
  say "  traffic is plain HTTP (the code and notebooks cross the room unencrypted). Use a trusted"
  say "  room network only. Failed logins are limited (10 per name, 30 per address, in 10 minutes)."
  say "警告：正在监听 $listen，同一网络中的任何人都能访问登录页，且流量为未加密的 HTTP；只在可信的教室网络中使用。"
  say "  登录失败次数有限制（10 分钟内每个用户名 10 次、每个地址 30 次）。"
  [ "$listen" = 0.0.0.0 ] && host=$(hostname -I 2>/dev/null | awk '{print $1}') && host=${host:-$(hostname)}
fi

# 5. Start. Secrets reach the hub through its environment, never its command line (which
#    other users of the machine can read); learners' servers do not inherit them. As root,
#    the hub's environment and hub/ are root's alone; as an ordinary user, see the warning.
last=$(printf 'learner%0*d' "$(( ${#learners} > 2 ? ${#learners} : 2 ))" "$learners")
say "learners / 学员: learner01 ... $last ($learners)   language / 语言: $lang"
say "open / 打开: http://$host:$port/"
say "learners log in as learnerNN with the workshop code / 学员用 learnerNN 和工作坊口令登录: $code"
say "instructor (admin) / 讲师（管理员）: instructor, password / 密码: $instructor_password"
say "learners' work / 学员的作业: $dir/learners/<name>/labs   (Ctrl-C stops the hub / 按 Ctrl-C 停止)"
export FXCOURSE_ROOT="$root" FXCOURSE_WORKSHOP_DIR="$dir" FXCOURSE_WORKSHOP_LEARNERS="$learners"
export FXCOURSE_WORKSHOP_PORT="$port" FXCOURSE_WORKSHOP_IP="$listen" FXCOURSE_LANG="$lang"
export FXCOURSE_WORKSHOP_CODE="$code" FXCOURSE_INSTRUCTOR_PASSWORD="$instructor_password"
export FXCOURSE_WORKSHOP_USERS="$users" FXCOURSE_WORKSHOP_PYTHON="$learner_python"
export PATH="$root/.venv/bin:$PATH"
cd "$dir/hub"
exec "$root/.venv/bin/jupyterhub" -f "$root/scripts/jupyter/workshop_config.py"
