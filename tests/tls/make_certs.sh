#!/bin/sh
# make_certs.sh DIR: the certificates the TLS tests use, made fresh by
# `openssl` at test time (EC P-256 keys: fast to make and to use), valid 2
# days.  In DIR:
#   ca.crt/.key          the CA the tests trust
#   wrongca.crt/.key     another CA, trusted by nobody: "wrong CA" cases
#   server.crt/.key      by ca, for IP 127.0.0.1 and DNS localhost
#   other.crt/.key       by ca, for DNS redis.internal only (name mismatch)
#   rogue.crt/.key       by wrongca, for IP 127.0.0.1 and DNS localhost
#   cnonly.crt/.key      by ca, CN localhost and no subjectAltName (refused:
#                        no CN fallback)
#   client.crt/.key      by ca, a client certificate (mutual TLS)
#   encrypted.key        client.key encrypted with a passphrase (refused:
#                        no passphrase prompt)
#   mismatch.key         a key that belongs to no certificate
set -eu
dir=$1
cd "$dir"
days=2

# A minimal config, so that the system's openssl.cnf (which varies between
# distributions) adds nothing of its own.
cat > req.cnf <<'CNF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
CNF

newkey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }

ca() { # name, common name
  newkey "$1"
  openssl req -config req.cnf -new -x509 -key "$1.key" -out "$1.crt" -days $days \
    -subj "/CN=$2" -extensions ca_ext 2>/dev/null
}

leaf() { # name, issuing CA, common name, subjectAltName or "", extendedKeyUsage
  newkey "$1"
  openssl req -config req.cnf -new -key "$1.key" -out "$1.csr" -subj "/CN=$3" 2>/dev/null
  {
    echo "basicConstraints = CA:FALSE"
    echo "keyUsage = critical, digitalSignature, keyEncipherment"
    echo "extendedKeyUsage = $5"
    [ -z "$4" ] || echo "subjectAltName = $4"
  } > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -out "$1.crt" \
    -days $days -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

ca ca "redlock test CA"
ca wrongca "redlock wrong CA"
leaf server ca localhost "IP:127.0.0.1, DNS:localhost" serverAuth
leaf other ca redis.internal "DNS:redis.internal" serverAuth
leaf rogue wrongca localhost "IP:127.0.0.1, DNS:localhost" serverAuth
leaf cnonly ca localhost "" serverAuth
leaf client ca "redlock test client" "" clientAuth
openssl pkey -in client.key -aes256 -passout pass:redlock-test -out encrypted.key 2>/dev/null
newkey mismatch
for f in ca wrongca server other rogue cnonly client; do
  [ -s "$f.crt" ] && [ -s "$f.key" ] || { echo "make_certs.sh: $f not made" >&2; exit 1; }
done
[ -s mismatch.key ] && grep -q ENCRYPTED encrypted.key
