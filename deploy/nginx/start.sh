#!/bin/sh
# nginx's entrypoint: TLS with the certificate mounted at /etc/nginx/tls (cert.pem and key.pem), or,
# when there is none, a self-signed one made at the first start and kept in that volume.
set -eu
dir=/etc/nginx/tls
if [ ! -s "$dir/cert.pem" ] || [ ! -s "$dir/key.pem" ]; then
  mkdir -p "$dir"
  name=${HERALD_TLS_NAME:-localhost}
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 825 -subj "/CN=$name" \
    -addext "subjectAltName=DNS:$name,DNS:localhost,IP:127.0.0.1" \
    -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
  chmod 600 "$dir/key.pem"
  echo "nginx: made a self-signed certificate for $name in $dir (mount a real one there to replace it)" >&2
fi
exec nginx -g 'daemon off;'
