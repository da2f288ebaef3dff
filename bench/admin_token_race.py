#!/usr/bin/env python3
# Usage: bench/admin_token_race.py path/to/sluice ROUNDS [serve flags, e.g. --max-tokens-per-user 0]
# Issue 32 M1: a thief holding bob's session loops POST /v1/tokens while an admin resets bob's
# password; a round counts when a token the thief got still authenticates after the reset.
import http.client, json, re, subprocess, sys, threading, time, os, socket
binary, rounds, extra = sys.argv[1], int(sys.argv[2]), sys.argv[3:]  # extra: more serve flags
s = socket.socket(); s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]; s.close()
db = f'/tmp/m1-{os.getpid()}.db'
log = open(f'/tmp/m1-{os.getpid()}.log', 'w+')
proc = subprocess.Popen([binary, 'serve', '--listen', f'127.0.0.1:{port}', '--policies', f'sqlite://{db}', '--access-log', 'false', *extra], stdout=log, stderr=log)
def req(method, path, body=None, headers={}):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    c.request(method, path, json.dumps(body) if body is not None else None, {'Content-Type': 'application/json', **headers})
    r = c.getresponse(); data = r.read(); c.close(); return r.status, data, r
def session(user, password):
    st, body, r = req('POST', '/v1/session', {'user': user, 'password': password})
    assert st == 200, (st, body)
    return {'Cookie': r.getheader('Set-Cookie').split(';')[0], 'X-CSRF-Token': json.loads(body)['csrf_token']}
for _ in range(100):
    try:
        if req('GET', '/healthz')[0] == 200: break
    except OSError: time.sleep(0.1)
log.seek(0); pw = re.search(r'"password":"([^"]+)"', log.read()).group(1)
A = session('admin', pw)
assert req('PUT', '/v1/users/admin/password', {'password': 'admin passphrase for the race', 'current_password': pw}, A)[0] == 204
admin = {'Authorization': 'Bearer ' + json.loads(req('POST', '/v1/tokens', {}, session('admin', 'admin passphrase for the race'))[1])['token']}
bob_password = 'bob passphrase 0 long enough'
assert req('POST', '/v1/users', {'name': 'bob', 'password': bob_password}, admin)[0] == 201
survived = 0
for round_ in range(rounds):
    stolen = session('bob', bob_password)
    minted, stop = [], threading.Event()
    def loop():
        while not stop.is_set():
            st, body, _ = req('POST', '/v1/tokens', {'description': 'persist'}, stolen)
            if st == 201: minted.append(json.loads(body)['token'])
            if st == 401: return
    threads = [threading.Thread(target=loop) for _ in range(4)]
    for t in threads: t.start()
    time.sleep(0.3)
    bob_password = f'bob passphrase {round_ + 1} long enough'
    assert req('PUT', '/v1/users/bob/password', {'password': bob_password}, admin)[0] == 204
    time.sleep(0.3); stop.set()
    for t in threads: t.join()
    alive = [t for t in minted if req('GET', '/v1/session', None, {'Authorization': 'Bearer ' + t})[0] == 200]
    survived += 1 if alive else 0
    print(f'round {round_ + 1}: minted {len(minted)}, working after the reset {len(alive)}')
proc.terminate(); proc.wait()
print(f'rounds with a surviving token: {survived} of {rounds}')
