#!/bin/bash
# A/B + retransmission demo: loss 5% on each line (independent seeds), trader on $1.
set -u
P=$1
B=/work/main/target/release
O=/tmp/demo-$P-${WAIT:-1000}
mkdir -p $O
ip netns exec t2t-ex $B/inject relay --ready --seed 7 --listen 198.18.0.1:26410 --target 198.18.0.2:26400 --loss 0.05 --orders-listen 198.18.0.1:26411 --orders-to 198.18.0.1:26401 --json-out $O/a.json > /dev/null &
RA=$!
ip netns exec t2t-ex $B/inject relay --ready --seed 8 --listen 198.18.0.1:26412 --target 198.18.0.2:26403 --loss 0.05 --json-out $O/b.json > /dev/null &
RB=$!
ip netns exec t2t-tr $B/trader --path $P --wait block --cpu 1 --order-port 26411 --port-b 26403 --retransmit-to 198.18.0.1:26402 --ab-wait-us ${WAIT:-1000} --stats-out $O/trader.json --idle-exit 10 2> $O/trader.err &
T=$!
sleep 1.5
ip netns exec t2t-ex $B/replay --source gbm:42:150000 --count 20000 --rate 10k --cpu 0 --target 198.18.0.1:26410 --target-b 198.18.0.1:26412 --retransmit --json-out $O/replay.json --drain-ms 300 --progress false 2> $O/replay.err
wait $RA $RB $T
python3 - $O <<'PY'
import json,sys
o=sys.argv[1]
t=json.load(open(o+'/trader.json')); r=json.load(open(o+'/replay.json'))
a=json.load(open(o+'/a.json')); b=json.load(open(o+'/b.json'))
la,lb=set(a['lost']),set(b['lost'])
print("relay A lost",len(la),"B lost",len(lb),"both",len(la&lb))
c=t['counters']
for k in ['packets','ticks','gap_messages','late_messages','duplicate_messages','recovered_messages','retransmit_requests','retransmit_requested','retransmit_gave_up','orders']:
    print(k,c[k])
print("lines",t['feed']['lines'],"lost_on_both",t['feed']['lost_on_both'])
print("rx_queue_frames",t.get('rx_queue_frames'))
print("retransmit",r['retransmit'])
print("orders received",r['orders_received'],"expected",r['parity']['expected_orders'])
print("parity",r['parity']['verdict'],r['parity']['explanation'])
print("ttt p50/p99/p99.9/max us",[r['tick_to_trade'][k] for k in ['p50_us','p99_us','p999_us','max_us']] if 'p50_us' in r['tick_to_trade'] else r['tick_to_trade'])
PY
