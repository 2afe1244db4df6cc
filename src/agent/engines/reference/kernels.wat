;; The reference engine's matrix-vector product in WebAssembly SIMD128 (no relaxed SIMD, no
;; fused multiply-add: every CPU computes the same bits). Built into kernels-wasm.ts by
;; scripts/build-wasm.mjs; the engine ships that, so nothing is compiled at a user's install.
;;
;; matvec(w, rows, cols, x, y): y[o] = Σ_i w[o·cols + i] · x[i] for o < rows, f32, byte addresses.
;; One fixed order per output element, whatever else is computed: four f32x4 partial sums over
;; i mod 16 (lanes i mod 4 within each), then one over the rest of the multiples of 4, combined
;; as (a0 + a1) + (a2 + a3), the lanes as (l0 + l1) + (l2 + l3), then the scalar tail in order.
(module
  (import "env" "memory" (memory 1))
  (func (export "matvec") (param $w i32) (param $rows i32) (param $cols i32) (param $x i32) (param $y i32)
    (local $o i32) (local $i i32) (local $row i32) (local $end16 i32) (local $end4 i32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $s f32)
    (local $wp i32) (local $xp i32)
    (local.set $end16 (i32.and (local.get $cols) (i32.const -16)))
    (local.set $end4 (i32.and (local.get $cols) (i32.const -4)))
    (local.set $row (local.get $w))
    (local.set $o (i32.const 0))
    (block $done
      (loop $rows_loop
        (br_if $done (i32.ge_u (local.get $o) (local.get $rows)))
        (local.set $a0 (v128.const i32x4 0 0 0 0))
        (local.set $a1 (v128.const i32x4 0 0 0 0))
        (local.set $a2 (v128.const i32x4 0 0 0 0))
        (local.set $a3 (v128.const i32x4 0 0 0 0))
        (local.set $i (i32.const 0))
        (block $b16
          (loop $l16
            (br_if $b16 (i32.ge_u (local.get $i) (local.get $end16)))
            (local.set $wp (i32.add (local.get $row) (i32.shl (local.get $i) (i32.const 2))))
            (local.set $xp (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 2))))
            (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (v128.load (local.get $wp)) (v128.load (local.get $xp)))))
            (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (v128.load offset=16 (local.get $wp)) (v128.load offset=16 (local.get $xp)))))
            (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (v128.load offset=32 (local.get $wp)) (v128.load offset=32 (local.get $xp)))))
            (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (v128.load offset=48 (local.get $wp)) (v128.load offset=48 (local.get $xp)))))
            (local.set $i (i32.add (local.get $i) (i32.const 16)))
            (br $l16)))
        (block $b4
          (loop $l4
            (br_if $b4 (i32.ge_u (local.get $i) (local.get $end4)))
            (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul
              (v128.load (i32.add (local.get $row) (i32.shl (local.get $i) (i32.const 2))))
              (v128.load (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 2)))))))
            (local.set $i (i32.add (local.get $i) (i32.const 4)))
            (br $l4)))
        (local.set $a0 (f32x4.add (f32x4.add (local.get $a0) (local.get $a1)) (f32x4.add (local.get $a2) (local.get $a3))))
        (local.set $s (f32.add
          (f32.add (f32x4.extract_lane 0 (local.get $a0)) (f32x4.extract_lane 1 (local.get $a0)))
          (f32.add (f32x4.extract_lane 2 (local.get $a0)) (f32x4.extract_lane 3 (local.get $a0)))))
        (block $bt
          (loop $lt
            (br_if $bt (i32.ge_u (local.get $i) (local.get $cols)))
            (local.set $s (f32.add (local.get $s) (f32.mul
              (f32.load (i32.add (local.get $row) (i32.shl (local.get $i) (i32.const 2))))
              (f32.load (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 2)))))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $lt)))
        (f32.store (i32.add (local.get $y) (i32.shl (local.get $o) (i32.const 2))) (local.get $s))
        (local.set $row (i32.add (local.get $row) (i32.shl (local.get $cols) (i32.const 2))))
        (local.set $o (i32.add (local.get $o) (i32.const 1)))
        (br $rows_loop))))
)
