#!/usr/bin/env python3
"""N keep-alive GET /auctions/1 on one connection (after waiting for /health): a fixed workload for callgrind."""
import http.client, sys, time
port=int(sys.argv[1]); n=int(sys.argv[2])
for _ in range(300):
    try:
        c=http.client.HTTPConnection("127.0.0.1",port,timeout=30); c.request("GET","/health"); c.getresponse().read(); break
    except OSError: time.sleep(0.2)
for i in range(n):
    c.request("GET","/auctions/1"); r=c.getresponse(); r.read()
