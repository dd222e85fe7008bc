;; NodeNumber, written by hand as a kube-scheduler-wasm-extension guest.
;;
;; The rule (minisched's steps/step16/plugins/nodenumber.py, and upstream's
;; examples/nodenumber/main.go): a pod prefers the node whose name ends in the
;; same digit as its own. Score is 10 on a match, else 0. As in upstream's guest,
;; a pod whose name has no final digit matches every node (the Python plugin
;; scores 0 everywhere instead: either way no node is preferred), and the
;; guestConfig {"reverse": true} swaps the two scores.
;;
;; How a guest talks to its host (kube-scheduler-wasm-extension's ABI,
;; scheduler/plugin/guest.go and host.go upstream):
;;   - The host calls the guest's exports. They take no parameters and answer
;;     with one number: a status code (0 = Success), packed with a score for
;;     "score".
;;   - Whatever else the guest needs (the pod, the node's name, its config) it
;;     asks for by calling the host's imports, which copy it into our memory.
;;
;; Call order: "_start" once per instance (it reads the config), "enqueue" once
;; per plugin, then in each scheduling cycle "prescore" once and "score" once per
;; node. The host runs a cycle's calls on one instance, so "prescore" can leave
;; the pod's digit in a global for "score" (the CycleState of a Go plugin).

(module $nodenumber

  ;; ---- Imports: what we ask the host for -------------------------------------
  ;;
  ;; The three readers share one protocol: we pass (buf, limit), a place in our
  ;; memory and how many bytes fit there. The host writes the value there only
  ;; if it fits, and always returns its length. So length > limit means "nothing
  ;; was written: make room and ask again" (see $make_room); 0 means empty.

  ;; The plugin's guestConfig string, as written in the scheduler configuration.
  (import "k8s.io/scheduler" "get_config"
    (func $get_config (param $buf i32) (param $limit i32) (result i32)))
  ;; The pod being scheduled, as a protobuf-encoded k8s.io.api.core.v1.Pod.
  (import "k8s.io/scheduler" "currentPod"
    (func $current_pod (param $buf i32) (param $limit i32) (result i32)))
  ;; The name of the node being scored, as UTF-8 text.
  (import "k8s.io/scheduler" "currentNodeName"
    (func $current_node_name (param $buf i32) (param $limit i32) (result i32)))
  ;; Our answer to "which cluster events may make a pod schedulable?": the host
  ;; reads len bytes at ptr, 8 per event (see the data at offset 0).
  (import "k8s.io/scheduler" "result.cluster_events"
    (func $result_cluster_events (param $ptr i32) (param $len i32)))
  ;; A line for the scheduler's log: severity (0 = info), and the text at ptr.
  (import "k8s.io/klog" "log"
    (func $log (param $severity i32) (param $ptr i32) (param $len i32)))

  ;; ---- Memory -----------------------------------------------------------------
  ;;
  ;; One 64 KiB page to start with; the host refuses a guest that does not
  ;; export its memory, because it writes into it. Layout:
  ;;      0  the cluster events "enqueue" returns (8 bytes)
  ;;      8  the text "reverse" with its quotes, for reading the config (9 bytes)
  ;;     24  the text true (4 bytes)
  ;;     32  prescore's log line for a pod with a digit (78 bytes)
  ;;    128  prescore's log line for a pod without one (72 bytes)
  ;;   1024  the buffer the host writes into, up to the end of memory
  (memory (export "memory") 1)

  ;; One event: a little-endian u32 resource (1 = Node) and a little-endian u32
  ;; action (1 = Add). A new node may be the one whose digit matches.
  (data (i32.const 0) "\01\00\00\00" "\01\00\00\00")
  (data (i32.const 8) "\22reverse\22")
  (data (i32.const 24) "true")
  (data (i32.const 32) "NodeNumber: the pod\27s name ends in a digit: the node that ends in it scores 10")
  (data (i32.const 128) "NodeNumber: the pod\27s name does not end in a digit: every node scores 10")

  (global $BUF i32 (i32.const 1024))

  ;; The pod's last digit, 0..9, or -1 when its name does not end in one.
  ;; Written by "prescore", read by "score".
  (global $pod_digit (mut i32) (i32.const -1))
  ;; 1 when the config says {"reverse": true}. Written by "_start".
  (global $reverse (mut i32) (i32.const 0))

  ;; ---- Exports: what the host calls --------------------------------------------

  ;; _start: the host calls it once, right after creating the instance (a Go
  ;; guest's main). We read the config here.
  (func (export "_start")
    (local $len i32)
    (local.set $len (call $get_config (global.get $BUF) (call $limit)))
    (if (call $make_room (local.get $len))
      (then (local.set $len (call $get_config (global.get $BUF) (call $limit)))))
    (global.set $reverse
      (call $says_reverse_true
        (global.get $BUF) (i32.add (global.get $BUF) (local.get $len)))))

  ;; enqueue () -> (): EventsToRegister. Without this export the host would
  ;; requeue the pod on every Pod, Node, PV, PVC, StorageClass or CSINode event.
  (func (export "enqueue")
    (call $result_cluster_events (i32.const 0) (i32.const 8)))

  ;; prescore () -> status code: PreScore. Fetch the pod, find its name, keep its
  ;; last digit for "score".
  (func (export "prescore") (result i32)
    (local $len i32)
    (local $meta i32) (local $meta_len i32)
    (local $name i32) (local $name_len i32)
    (local.set $len (call $current_pod (global.get $BUF) (call $limit)))
    (if (call $make_room (local.get $len))
      (then (local.set $len (call $current_pod (global.get $BUF) (call $limit)))))
    ;; Pod.metadata is field 1 of Pod; ObjectMeta.name is field 1 of ObjectMeta.
    (call $field (global.get $BUF) (i32.add (global.get $BUF) (local.get $len)) (i32.const 1))
    (local.set $meta_len) (local.set $meta)
    (call $field (local.get $meta) (i32.add (local.get $meta) (local.get $meta_len)) (i32.const 1))
    (local.set $name_len) (local.set $name)
    (global.set $pod_digit (call $last_digit (local.get $name) (local.get $name_len)))
    ;; Say which, in the scheduler's log (klog.Info in a Go guest).
    (if (i32.ge_s (global.get $pod_digit) (i32.const 0))
      (then (call $log (i32.const 0) (i32.const 32) (i32.const 78)))
      (else (call $log (i32.const 0) (i32.const 128) (i32.const 72))))
    (i32.const 0)) ;; Success

  ;; score () -> i64: Score. The high 32 bits are the score, the low 32 bits the
  ;; status code (0 = Success): WebAssembly 1.0 functions return one value.
  (func (export "score") (result i64)
    (local $len i32) (local $match i32)
    (local.set $len (call $current_node_name (global.get $BUF) (call $limit)))
    (if (call $make_room (local.get $len))
      (then (local.set $len (call $current_node_name (global.get $BUF) (call $limit)))))
    ;; A match: the pod has no digit, or the node's last digit is the pod's.
    (local.set $match
      (i32.or
        (i32.eq (global.get $pod_digit) (i32.const -1))
        (i32.eq (global.get $pod_digit)
                (call $last_digit (global.get $BUF) (local.get $len)))))
    ;; {"reverse": true} flips it (1 xor 1 = 0, 0 xor 1 = 1).
    (local.set $match (i32.xor (local.get $match) (global.get $reverse)))
    (i64.shl
      (i64.extend_i32_u (select (i32.const 10) (i32.const 0) (local.get $match)))
      (i64.const 32)))

  ;; ---- Helpers -------------------------------------------------------------------

  ;; How many bytes fit in the buffer: from $BUF to the end of memory.
  (func $limit (result i32)
    (i32.sub (i32.mul (memory.size) (i32.const 65536)) (global.get $BUF)))

  ;; After a reader returned $len: 0 if the value fitted (it is in the buffer);
  ;; else grow memory so that it will, and return 1: "ask again".
  (func $make_room (param $len i32) (result i32)
    (if (i32.le_u (local.get $len) (call $limit)) (then (return (i32.const 0))))
    ;; Pages missing, rounded up. memory.grow returns -1 when it cannot.
    (if (i32.eq (i32.const -1)
          (memory.grow
            (i32.div_u (i32.add (i32.sub (local.get $len) (call $limit)) (i32.const 65535))
                       (i32.const 65536))))
      (then (unreachable))) ;; a trap: the host reports it as an error status
    (i32.const 1))

  ;; The last character of the text at $p (length $len) as a digit 0..9, or -1.
  (func $last_digit (param $p i32) (param $len i32) (result i32)
    (local $d i32)
    (if (i32.eqz (local.get $len)) (then (return (i32.const -1))))
    ;; The byte minus '0' (48). Unsigned, anything below '0' wraps to a huge
    ;; number, so one comparison checks both ends of '0'..'9'.
    (local.set $d
      (i32.sub
        (i32.load8_u (i32.add (local.get $p) (i32.sub (local.get $len) (i32.const 1))))
        (i32.const 48)))
    (if (result i32) (i32.lt_u (local.get $d) (i32.const 10))
      (then (local.get $d))
      (else (i32.const -1))))

  ;; ---- Protobuf: just enough to find a pod's name ---------------------------------
  ;;
  ;; A protobuf message is a run of fields. Each starts with a varint tag,
  ;; (field number << 3) | wire type, and the wire type says how long the value
  ;; is: 0 a varint, 1 eight bytes, 2 a varint length then that many bytes
  ;; (strings and nested messages), 5 four bytes. Kubernetes never uses the old
  ;; group types 3 and 4; we trap on them.

  ;; A varint at $p: 7 bits per byte, low bits first; a byte with its top bit set
  ;; says "more follows". Returns the value (its low 32 bits) and where the next
  ;; thing starts.
  (func $varint (param $p i32) (result i32 i32)
    (local $value i32) (local $shift i32) (local $byte i32)
    (loop $more
      (local.set $byte (i32.load8_u (local.get $p)))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (local.set $value
        (i32.or (local.get $value)
                (i32.shl (i32.and (local.get $byte) (i32.const 0x7f)) (local.get $shift))))
      (local.set $shift (i32.add (local.get $shift) (i32.const 7)))
      (br_if $more (i32.and (local.get $byte) (i32.const 0x80))))
    (local.get $value) (local.get $p))

  ;; In the message from $p up to $end, the first length-delimited field numbered
  ;; $want: returns where its bytes start and how many there are, or 0 0 when it
  ;; is absent (for a name, the same as empty). Skips every other field.
  (func $field (param $p i32) (param $end i32) (param $want i32) (result i32 i32)
    (local $tag i32) (local $len i32)
    (block $absent
      (loop $next
        (br_if $absent (i32.ge_u (local.get $p) (local.get $end)))
        (call $varint (local.get $p)) (local.set $p) (local.set $tag)
        (block $skipped
          ;; Wire type 2: a length, then the bytes. Ours, or jump over it.
          (if (i32.eq (i32.and (local.get $tag) (i32.const 7)) (i32.const 2))
            (then
              (call $varint (local.get $p)) (local.set $p) (local.set $len)
              (if (i32.eq (i32.shr_u (local.get $tag) (i32.const 3)) (local.get $want))
                (then (return (local.get $p) (local.get $len))))
              (local.set $p (i32.add (local.get $p) (local.get $len)))
              (br $skipped)))
          ;; Wire type 0: a varint.
          (if (i32.eqz (i32.and (local.get $tag) (i32.const 7)))
            (then (call $varint (local.get $p)) (local.set $p) (drop) (br $skipped)))
          ;; Wire type 1: eight bytes.
          (if (i32.eq (i32.and (local.get $tag) (i32.const 7)) (i32.const 1))
            (then (local.set $p (i32.add (local.get $p) (i32.const 8))) (br $skipped)))
          ;; Wire type 5: four bytes.
          (if (i32.eq (i32.and (local.get $tag) (i32.const 7)) (i32.const 5))
            (then (local.set $p (i32.add (local.get $p) (i32.const 4))) (br $skipped)))
          (unreachable))
        (br $next)))
    (i32.const 0) (i32.const 0))

  ;; ---- The config: not a JSON parser ------------------------------------------------
  ;;
  ;; Upstream's guest decodes the config as JSON into {Reverse bool}. We only
  ;; look for the key "reverse" (quotes included), skip blanks and the colon after
  ;; it, and check for true. Anything else, an empty config included, means
  ;; false; so does a config upstream would reject as invalid JSON.

  ;; 1 when the text from $p up to $end says "reverse": true, else 0.
  (func $says_reverse_true (param $p i32) (param $end i32) (result i32)
    (local $c i32)
    ;; Find the key.
    (block $found
      (loop $scan
        (if (i32.gt_u (i32.add (local.get $p) (i32.const 9)) (local.get $end))
          (then (return (i32.const 0))))
        (br_if $found (call $starts_with (local.get $p) (i32.const 8) (i32.const 9)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $scan)))
    (local.set $p (i32.add (local.get $p) (i32.const 9)))
    ;; Skip blanks (any byte up to ' ', 32) and the colon (':', 58).
    (block $skipped
      (loop $skip
        (br_if $skipped (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $p)))
        (br_if $skipped
          (i32.and (i32.gt_u (local.get $c) (i32.const 32))
                   (i32.ne (local.get $c) (i32.const 58))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $skip)))
    ;; Then true?
    (i32.and
      (i32.le_u (i32.add (local.get $p) (i32.const 4)) (local.get $end))
      (call $starts_with (local.get $p) (i32.const 24) (i32.const 4))))

  ;; 1 when the $n bytes at $p are the $n bytes at $text, else 0.
  (func $starts_with (param $p i32) (param $text i32) (param $n i32) (result i32)
    (block $differ
      (loop $compare
        (if (i32.eqz (local.get $n)) (then (return (i32.const 1))))
        (br_if $differ
          (i32.ne (i32.load8_u (local.get $p)) (i32.load8_u (local.get $text))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (local.set $text (i32.add (local.get $text) (i32.const 1)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $compare)))
    (i32.const 0))
)
