#!/usr/bin/python3
"""A model of envoyproxy/ratelimit's answers, written from its source (src/config/config_impl.go,
src/service/ratelimit.go, src/limiter/base_limiter.go, src/redis/fixed_cache_impl.go) with its
default settings: the Redis fixed-window cache, no local cache, no STOP_CACHE_KEY_INCREMENT_-
WHEN_OVERLIMIT, no response headers, no dynamic metadata, MONTH as 30 days and YEAR as 365.

A file with `headers: true` stands for its LIMIT_RESPONSE_HEADERS_ENABLED=true with the default
header names (RateLimit-Limit, -Remaining, -Reset): its answers carry `headers` too.

It writes the `expect` of every call of the corpus files it is given (`--write`), or checks that
they are what it computes (the default). It never looks at Sluice: the corpus test
(envoy_corpus_test) compares Sluice's answers with what this wrote.

usage: envoy_reference.py [--write] FILE.yaml...
"""

import re
import sys

import yaml

DIVIDER = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400, "WEEK": 7 * 86400,
           "MONTH": 30 * 86400, "YEAR": 365 * 86400}
MAX_UINT32 = 2**32 - 1


class Node:
    def __init__(self):
        self.children = {}      # final key ("key" or "key_value") -> Node
        self.wildcards = []     # final keys holding a '*', in config order
        self.limit = None       # dict: requests_per_unit, unit, unlimited, shadow, name, replaces
        self.share = False      # share_threshold: the wildcard's values share one counter


def load(node, descriptors):
    for d in descriptors or []:
        value = str(d.get("value", "") or "")
        final = d["key"] + ("_" + value if value else "")
        child = Node()
        rl = d.get("rate_limit")
        if rl is not None:
            child.limit = {"requests_per_unit": int(rl.get("requests_per_unit", 0) or 0),
                           "unit": str(rl.get("unit", "")).upper(),
                           "unlimited": bool(rl.get("unlimited", False)),
                           "shadow": bool(d.get("shadow_mode", False)),
                           "name": str(rl.get("name", "") or ""),
                           "replaces": [r["name"] for r in rl.get("replaces", []) or []]}
        child.share = bool(d.get("share_threshold", False))
        load(child, d.get("descriptors"))
        node.children[final] = child
        if "*" in value:
            node.wildcards.append(final)


def glob_matches(pattern, text):
    # '*' stands for any run of characters, anywhere in the value (a trailing one: a prefix).
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, text, re.DOTALL) is not None


def get_limit(domains, domain, entries):
    """The limit a descriptor reaches and the counter key's entries (shared wildcards by pattern)."""
    root = domains.get(domain)
    if root is None:
        return None, None
    node, found = root, None
    key_entries = []
    for i, (key, value) in enumerate(entries):
        final = key + "_" + value
        nxt = node.children.get(final)
        counted_value = value
        if nxt is None:
            for wildcard in node.wildcards:
                if glob_matches(wildcard, final):
                    nxt = node.children[wildcard]
                    if nxt.share:
                        counted_value = wildcard[len(key) + 1:]
                    break
        if nxt is None:
            nxt = node.children.get(key)
        key_entries.append((key, counted_value))
        if nxt is not None and nxt.limit is not None and i == len(entries) - 1:
            found = nxt.limit
        if nxt is not None and nxt.children:
            node = nxt
        else:
            break
    return found, key_entries


class Service:
    def __init__(self, config_text, headers=False):
        self.headers = headers
        self.domains = {}
        for document in yaml.safe_load_all(config_text):
            root = Node()
            load(root, document.get("descriptors"))
            self.domains[document["domain"]] = root
        self.counters = {}

    def should_rate_limit(self, now_seconds, call):
        domain = call["domain"]
        hits = max(1, int(call.get("hits_addend", 0) or 0))
        limits, keys = [], []
        replacing = set()
        for entries in call["descriptors"]:
            limit, key_entries = get_limit(self.domains, domain, [tuple(e) for e in entries])
            if limit is not None:
                replacing.update(limit["replaces"])
            limits.append(limit)
            keys.append(key_entries)
        unlimited = [limit is not None and limit["unlimited"] for limit in limits]
        limits = [None if u else limit for limit, u in zip(limits, unlimited)]
        limits = [None if limit is not None and limit["name"] and limit["name"] in replacing
                  else limit for limit in limits]
        statuses = []
        overall = "OK"
        minimum = None  # the status the headers describe (ratelimit.go's minimumDescriptor)
        for limit, key_entries, is_unlimited in zip(limits, keys, unlimited):
            if is_unlimited:
                statuses.append({"code": "OK", "remaining": MAX_UINT32})
                continue
            if limit is None:
                statuses.append({"code": "OK", "remaining": 0})
                continue
            divider = DIVIDER[limit["unit"]]
            window = now_seconds - now_seconds % divider
            cache_key = (domain, tuple(key_entries), window)
            after = self.counters.get(cache_key, 0) + hits  # INCRBY, over the limit or not
            self.counters[cache_key] = after
            status = {"requests_per_unit": limit["requests_per_unit"], "unit": limit["unit"],
                      "name": limit["name"], "reset": divider - now_seconds % divider}
            if after > limit["requests_per_unit"]:
                status["code"] = "OK" if limit["shadow"] else "OVER_LIMIT"
                status["remaining"] = 0
                if not limit["shadow"]:
                    overall = "OVER_LIMIT"
            else:
                status["code"] = "OK"
                status["remaining"] = limit["requests_per_unit"] - after
            # The first with the fewest remaining; then any over-limit status, the last winning.
            if minimum is None or status["remaining"] < minimum["remaining"]:
                minimum = status
            if status["code"] == "OVER_LIMIT":
                minimum = status
            statuses.append(status)
        answer = {"overall": overall, "statuses": [dict(sorted(s.items())) for s in statuses]}
        if self.headers:
            answer["headers"] = [] if minimum is None else [
                ["RateLimit-Limit", str(minimum["requests_per_unit"])],
                ["RateLimit-Remaining", str(minimum["remaining"])],
                ["RateLimit-Reset", str(minimum["reset"])]]
        return answer


def answers(corpus):
    service = Service(corpus["config"], bool(corpus.get("headers", False)))
    start = int(corpus["start"])
    for call in corpus["calls"]:
        now_seconds = int(start + float(call.get("at", 0)))  # time.Now().Unix(): whole seconds
        yield call, service.should_rate_limit(now_seconds, call)


def flow_dump(data):
    class Dumper(yaml.SafeDumper):
        pass

    def represent_dict(dumper, value):
        flow = "statuses" not in value and "descriptors" not in value and "calls" not in value \
            and "expect" not in value
        return dumper.represent_mapping("tag:yaml.org,2002:map", value.items(), flow_style=flow)

    def represent_list(dumper, value):
        flow = all(not isinstance(v, dict) for v in value) and \
            not all(isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and
                    v[0].startswith("RateLimit-") for v in value) or not value
        return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=flow)

    def represent_str(dumper, value):
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(dict, represent_dict)
    Dumper.add_representer(list, represent_list)
    Dumper.add_representer(str, represent_str)
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, width=100, allow_unicode=True)


def main(argv):
    write = "--write" in argv
    files = [a for a in argv if a != "--write"]
    wrong = 0
    for path in files:
        with open(path) as f:
            corpus = yaml.safe_load(f)
        for i, (call, expect) in enumerate(answers(corpus)):
            if write:
                call["expect"] = expect
            elif call.get("expect") != expect:
                wrong += 1
                print("%s: calls[%d]: written %r, computed %r" % (path, i, call.get("expect"),
                                                                   expect))
        if write:
            with open(path, "w") as f:
                f.write(flow_dump(corpus))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
