# Shared by bench/*/run.sh: a throwaway certificate, a free port, nginx as the reference
# server (a process started here with a config in a temp dir, on 127.0.0.1 only, stopped
# by its pid), and one wrk run reduced to "req/s p50 p99". Source it, then call
# bench_setup NAME; the caller sets THREADS and DURATION and, for its own server, OURS_PID.

# bench_setup NAME: WORK (a temp dir) and an EXIT trap that stops OURS_PID and NGINX_PID
# (processes this script started) and removes WORK.
bench_setup() {
  WORK=$(mktemp -d "/tmp/commgate-bench-$1.XXXXXX")
  chmod 755 "$WORK"
  OURS_PID=""
  NGINX_PID=""
  trap bench_cleanup EXIT
}

bench_cleanup() {
  [ -n "$OURS_PID" ] && kill "$OURS_PID" 2>/dev/null && wait "$OURS_PID" 2>/dev/null || true
  [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null || true
  rm -rf "$WORK"
}

bench_require() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh" >&2; exit 1; }
  done
}

# A throwaway EC P-256 certificate for 127.0.0.1: $WORK/tls.crt, $WORK/tls.key.
bench_make_cert() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=commgate-bench -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$WORK/tls.key" -out "$WORK/tls.crt" 2>/dev/null
}

bench_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# bench_start_nginx PORT LOCATIONS: nginx with $THREADS workers serving the given location
# blocks over TLS on 127.0.0.1:PORT. Sets NGINX_PID.
bench_start_nginx() {
  local port=$1 locations=$2
  mkdir -p "$WORK/nginx"
  cat > "$WORK/nginx.conf" <<CONF
worker_processes $THREADS;
pid $WORK/nginx.pid;
error_log $WORK/nginx/error.log warn;
daemon off;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $WORK/nginx;
  proxy_temp_path $WORK/nginx;
  fastcgi_temp_path $WORK/nginx;
  uwsgi_temp_path $WORK/nginx;
  scgi_temp_path $WORK/nginx;
  keepalive_requests 1000000;
  client_max_body_size 8m;
  client_body_buffer_size 64k;
  server {
    listen 127.0.0.1:$port ssl;
    ssl_certificate $WORK/tls.crt;
    ssl_certificate_key $WORK/tls.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    $locations
  }
}
CONF
  nginx -p "$WORK/nginx" -c "$WORK/nginx.conf" -e "$WORK/nginx/error.log" &
  NGINX_PID=$!
}

# bench_wait_for URL [curl args...]: until it answers 2xx (5 s).
bench_wait_for() {
  local url=$1; shift
  for _ in $(seq 100); do curl -skf "$@" "$url" -o /dev/null && return 0; sleep 0.05; done
  echo "no answer from $url" >&2
  return 1
}

# bench_wrk CONNECTIONS URL [wrk args...]: prints "req/s p50 p99"; errors go to stderr.
# DURATION and THREADS come from the caller.
bench_wrk() {
  local conns=$1 url=$2
  shift 2
  local wrk_threads=$(( conns < THREADS ? conns : THREADS ))
  local out
  out=$(wrk -t"$wrk_threads" -c"$conns" -d"$DURATION" --latency "$@" "$url")
  if grep -q -E 'Non-2xx|Socket errors' <<<"$out"; then
    echo "errors at c=$conns $url: $(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr '\n' ' ')" >&2
  fi
  echo "$(awk '/Requests\/sec/ {print $2}' <<<"$out") $(awk '$1=="50%" {print $2}' <<<"$out") $(awk '$1=="99%" {print $2}' <<<"$out")"
}
