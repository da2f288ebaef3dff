#!/usr/bin/env python3
# Usage: bench/admin_token_flood.py path/to/sluice
# 400 tokens with ~1 MB descriptions by a user with no roles, then the admin's listing (issue 32 M9).
import http.client, json, re, subprocess, sys, time, os, socket
binary = sys.argv[1]
s = socket.socket(); s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]; s.close()
db = f'/tmp/m9-{os.getpid()}.db'
log = open(f'/tmp/m9-{os.getpid()}.log', 'w+')
proc = subprocess.Popen([binary, 'serve', '--listen', f'127.0.0.1:{port}', '--policies', f'sqlite://{db}', '--access-log', 'false'], stdout=log, stderr=log)
def req(method, path, body=None, headers={}):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=300)
    c.request(method, path, json.dumps(body) if body is not None else None, {'Content-Type': 'application/json', **headers})
    r = c.getresponse(); data = r.read(); c.close(); return r.status, data, r
for _ in range(100):
    try:
        if req('GET', '/healthz')[0] == 200: break
    except OSError: time.sleep(0.1)
log.seek(0); pw = re.search(r'"password":"([^"]+)"', log.read()).group(1)
st, body, r = req('POST', '/v1/session', {'user': 'admin', 'password': pw}); cookie = r.getheader('Set-Cookie').split(';')[0]; csrf = json.loads(body)['csrf_token']
new_admin = 'admin passphrase for the measurement'
assert req('PUT', '/v1/users/admin/password', {'password': new_admin, 'current_password': pw}, {'Cookie': cookie, 'X-CSRF-Token': csrf})[0] == 204
st, body, r = req('POST', '/v1/session', {'user': 'admin', 'password': new_admin}); A = {'Cookie': r.getheader('Set-Cookie').split(';')[0], 'X-CSRF-Token': json.loads(body)['csrf_token']}
admin_token = 'Bearer ' + json.loads(req('POST', '/v1/tokens', {}, A)[1])['token']
assert req('POST', '/v1/users', {'name': 'bob', 'password': 'bob passphrase long enough'}, A)[0] == 201
bob = {'Authorization': 'Bearer ' + json.loads(req('POST', '/v1/tokens', {'user': 'bob'}, A)[1])['token']}
codes = {}
t0 = time.time()
for i in range(400):
    st = req('POST', '/v1/tokens', {'description': 'x' * 1_000_000}, bob)[0]
    codes[st] = codes.get(st, 0) + 1
small = {}
for i in range(150):
    st = req('POST', '/v1/tokens', {'description': 'y' * 1000}, bob)[0]
    small[st] = small.get(st, 0) + 1
t1 = time.time()
st, body, _ = req('GET', '/v1/tokens?user=bob', None, {'Authorization': admin_token})
listing = len(body)
rss = int(open(f'/proc/{proc.pid}/status').read().split('VmRSS:')[1].split()[0])
proc.terminate(); proc.wait()
size = sum(os.path.getsize(db + sfx) for sfx in ('', '-wal', '-shm') if os.path.exists(db + sfx))
print(f'1 MB descriptions: {codes}; 1 kB descriptions: {small}; {t1 - t0:.1f} s; db+wal {size/1e6:.1f} MB; listing status {st} {listing/1e6:.2f} MB; server RSS after listing {rss/1024:.0f} MB')
