#!/usr/bin/env python3
# Usage: bench/admin_kdf_flood.py path/to/sluice ADDRESSES SECONDS  (loopback 127.0.0.2.. as sources)
# Flood of wrong own-password changes from many loopback addresses against `sluice serve`,
# timing an admin call meanwhile (issue 32 M7 reproduction).
import http.client, json, re, subprocess, sys, threading, time, os, socket, statistics
binary, addresses, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(); s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]; s.close()
db = f'/tmp/m7-{os.getpid()}.db'
log = open(f'/tmp/m7-{os.getpid()}.log', 'w+')
proc = subprocess.Popen([binary, 'serve', '--listen', f'127.0.0.1:{port}', '--policies', f'sqlite://{db}', '--access-log', 'false'], stdout=log, stderr=log)
def req(method, path, body=None, headers={}, source='127.0.0.1'):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=120, source_address=(source, 0))
    h = {'Content-Type': 'application/json', **headers}
    c.request(method, path, json.dumps(body) if body is not None else None, h)
    r = c.getresponse(); data = r.read(); c.close()
    return r.status, data
for _ in range(100):
    try:
        if req('GET', '/healthz')[0] == 200: break
    except OSError: time.sleep(0.1)
log.seek(0); pw = re.search(r'"password":"([^"]+)"', log.read()).group(1)
st, body = req('POST', '/v1/session', {'user': 'admin', 'password': pw})
login = json.loads(body); cookie = None
c = http.client.HTTPConnection('127.0.0.1', port); c.request('POST', '/v1/session', json.dumps({'user': 'admin', 'password': pw}), {'Content-Type': 'application/json'})
r = c.getresponse(); cookie = r.getheader('Set-Cookie').split(';')[0]; csrf = json.loads(r.read())['csrf_token']
new_admin = 'admin passphrase for the measurement'
assert req('PUT', '/v1/users/admin/password', {'password': new_admin, 'current_password': pw}, {'Cookie': cookie, 'X-CSRF-Token': csrf})[0] == 204
c = http.client.HTTPConnection('127.0.0.1', port); c.request('POST', '/v1/session', json.dumps({'user': 'admin', 'password': new_admin}), {'Content-Type': 'application/json'})
r = c.getresponse(); cookie = r.getheader('Set-Cookie').split(';')[0]; csrf = json.loads(r.read())['csrf_token']
A = {'Cookie': cookie, 'X-CSRF-Token': csrf}
st, body = req('POST', '/v1/tokens', {'description': 'admin'}, A); admin_token = json.loads(body)['token']
assert req('POST', '/v1/users', {'name': 'bob', 'password': 'bob passphrase long enough'}, A)[0] == 201
st, body = req('POST', '/v1/tokens', {'user': 'bob'}, A); bob = {'Authorization': 'Bearer ' + json.loads(body)['token']}
stop = time.time() + seconds
codes = {}
lock = threading.Lock()
def flood(i):
    src = f'127.0.0.{i + 2}'
    while time.time() < stop:
        try:
            st, _ = req('PUT', '/v1/users/bob/password', {'password': 'another long passphrase', 'current_password': 'wrong guess'}, bob, src)
        except Exception as e:
            st = 'err'
        with lock: codes[st] = codes.get(st, 0) + 1
threads = [threading.Thread(target=flood, args=(i,)) for i in range(addresses)]
for t in threads: t.start()
lat = []; admin_codes = {}
time.sleep(0.5)
while time.time() < stop:
    t0 = time.time(); st, _ = req('GET', '/v1/users', None, {'Authorization': 'Bearer ' + admin_token}); lat.append(time.time() - t0)
    admin_codes[st] = admin_codes.get(st, 0) + 1
    time.sleep(0.2)
for t in threads: t.join()
proc.terminate(); proc.wait()
print(f'addresses={addresses} seconds={seconds} flood answers={codes} admin answers={admin_codes} admin latency ms: median={statistics.median(lat)*1000:.1f} max={max(lat)*1000:.1f} n={len(lat)}')
