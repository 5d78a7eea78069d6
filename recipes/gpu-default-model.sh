#!/usr/bin/env bash
# The default model's data and training on one CUDA GPU: the steps of recipes/default-model.sh, sized for a
# GPU (every training prompt instead of 6000, big batches, several epochs, two training runs).
# On an H100: distillation 4 min, entropies 1 min, the frozen run 7 min (measured; benchmarks/results/
# gpu-default-model/), the LoRA run ~10 min (estimated, not yet finished once). On a CPU: days; use
# recipes/default-model.sh there.
# Every step resumes: rerun after an interruption. Environment knobs (defaults in brackets):
#   HB [hamburger]  command that runs the CLI     DEVICE [cuda]  device of the data verbs and training
#   WORK [runs/gpu] run folder                    LIMIT []       use only the first N prompts (smoke tests)
#   DISTILL_BATCH [512], SEGMENT_BATCH [64]       TRAIN_SET []   extra `--set k=v` for both training runs
#   RUNS [full lora-two-sets lora-merged lora frozen]  training runs, in order (data: none, the data steps only;
#        lora-two-sets: the same run with a
#        second adapter set on the single slots after a row's first merge, `lora_scope: merged_and_after`;
#        lora-after-merge: one set from the first merge on, which lost 5 points on those slots on the CPU;
#        lora-single-tail: lora-merged in the single-tail layout (`single_tail: 1`, experiments/2026-11-25-single-tail);
#        lora-fold: lora-merged in the folding single-tail layout (`single_tail: 1`, `fold_tail: 2`: each group read
#        off its single last token, the history older than 2 groups in one slot per group;
#        experiments/2026-11-25-fold-tail);
#        lora-fold-fresh: lora-fold without the training answers that loop (`max_repeat: 0.5`, rep4 above 0.5: 16% of
#        the greedy answers, holding 52% of their repeated tokens; experiments/2026-12-05-repeats, question 3);
#        lora-verify-fold: lora-merged in the layout verify mode's folding decodes in (`verify_window: 16`: every
#        token its own slot, predicted by the base, each entropy segment folded into one merged slot 16 tokens after
#        its end; the reading only, `stop_loss_weight: 0`; experiments/2026-11-26-verify-speed; it unlearned
#        HAMburger's own layout, experiments/2026-11-26-gpu-verify-fold);
#        lora-both: lora-merged with every 2nd step in lora-verify-fold's layout (`verify_window_every: 2`), one set
#        of adapters for both decodings (experiments/2026-11-26-gpu-lora-both);
#        lora-fold-kl: lora-verify-fold at the windows verify_fold decodes at (`verify_window: 48`) with the KL to
#        the base weighted 4x (`kl_weight: 2`): a folded reading for sampling, whose cost is the KL, not top-1 flips;
#        lora-fold-pure: lora-fold-kl without the cross-entropy on the data's tokens (`token_loss_weight: 0`, pure
#        KL; experiments/2026-11-26-cpu-pure-kl: 12% lower reading KL than lora-fold-kl's settings on the CPU);
#        lora-fold-mix: lora-fold-pure with half of the KL term reversed (`kl_mix: 0.5`, KL(model || base): what a
#        sampled token costs the base; the same experiment: lower sampled NLL gap and fewer sampled spikes);
#        lora-fold-reverse: the same all reversed (`kl_mix: 1`; on the CPU the best sampled long math of the three;
#        on an H200 no different, read or decoded over 120 prompts: experiments/2026-11-27-gpu-fold-reverse);
#        lora-fold-after: lora-fold-reverse whose slots that read folded history adapt too (`lora_scope:
#        merged_and_after`: a second adapter set, added at zero, at every one-token slot fed after the first fold);
#        lora-msd-context: lora-merged with an MSD that also reads the 8 slots before its features (`msd_context: 8`,
#        experiments/2026-11-25-cpu-msd-context);
#        lora-grow4: lora-merged with the init's 2-layer MSD grown to 4 layers (`grow_decoder: 4`, new layers start
#        as the identity; experiments/2026-11-25-cpu-grow-msd);
#        keep-fold-lora: the base's reading of verify_fold's default, training-free fold (each segment keeps its
#        first token's slot; `verify_fold`: no merged slot, so only base weights read it), LoRA at every slot
#        (`lora_scope: all`), pure KL half reversed, from the shipped grafted modules without adapters (not trained;
#        experiments/2026-11-27-keep-fold-full: the CPU pilot); keep-fold-after: the same adapters on only from a row's
#        first fold on (`lora_scope: after_fold`: lossless verify stays the base; ships as a fold reader, `hamburger
#        export --fold-reader`); keep-fold-full: the same with the whole base trained;
#        full: the paper's recipe plus KL, the fast path)
#   DISTILL_SECONDS []  stop distilling after this long and go on with the rows made so far (a rerun continues)
#   SAMPLED [1]  every run but `lora` also trains on sampled answers (temperature 0.7, top-p 0.9; issue 19
#        item 3), beside the greedy ones: the draws named (ids ID#sN; e.g. SAMPLED="1 2": two answers per training
#        prompt); validation stays the greedy rows. Each draw's committed rows (DISTILLED with -sN before .jsonl,
#        gzipped; made on a CPU between GPU windows) are continued here (DISTILL_SECONDS caps each draw). On by
#        default since experiments/2026-12-03-sampled-rows (the shipped model keeps the base's top token at merged
#        slots 7.9 points less often after sampled history); SAMPLED= (empty) turns it off
#   COMPILE [false]  torch.compile the `full` run's base stack: on an H100 (2026-11-25) the whole stack cost 11 min
#        before the first step and ~4 min of recompiles later for 29k response tok/s in steps; since session 60 it
#        compiles layer by layer (`compile_region: layer`, 0.24x the warm-up on a CPU), not yet timed on a GPU
set -euo pipefail
cd "$(dirname "$0")/.."
HB=${HB:-hamburger}
DEVICE=${DEVICE:-cuda}
W=${WORK:-runs/gpu}
BASE=smollm2-135m-instruct
P=data/prompts/train-all.jsonl
D=${DISTILLED:-data/distilled/$BASE.train.jsonl}
mkdir -p "$W"
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }

# Steps 1-5 make the data. They run again only where they have not all finished in this work folder with these
# data settings: a window's training call after its data call found every row done, in 28 s of loading and checks
# (2026-11-26, before the sampled draws doubled them). A distillation DISTILL_SECONDS cut short leaves them to run
# again, to go on.
READY="SAMPLED=${SAMPLED-1} LIMIT=${LIMIT:-}"
TRAIN=$W/train.jsonl
SDIR=$W/sampled
[ "${SAMPLED-1}" = 1 ] || SDIR=$W/sampled-$(echo ${SAMPLED-1} | tr ' ' -)
[ -z "${SAMPLED-1}" ] || TRAIN=$SDIR/train.jsonl
make_data() {
    # 1. Every training prompt of the shipped data (hamburger/data) (the CPU recipe's 6000 are its first 6000 rows).
    [ -s $P ] || $HB prompts --sources t0_prompts,self_instruct,gsm8k --split train --seed 0 --out $P
    # The committed distilled rows ship gzipped (16135 rows: the first 2976 made on the CPU, the rest on a GPU).
    [ -s "$D" ] || [ ! -s "$D.gz" ] || zcat "$D.gz" > "$D"
    # 2. Self-distillation, greedy, fp32 (continues the committed file: rows already there are skipped).
    stamp distill
    ${DISTILL_SECONDS:+timeout -s INT $DISTILL_SECONDS} $HB distill --base $BASE --prompts $P --out "$D" \
        --max-new-tokens 256 --batch-size "${DISTILL_BATCH:-512}" --device "$DEVICE" ${LIMIT:+--limit $LIMIT} || \
        { [ -n "${DISTILL_SECONDS:-}" ] && CUT=1; }
    python3 -c "from hamburger.data.io import read_jsonl; import sys; read_jsonl(sys.argv[1], tail=\"cut\", \
        missing_ok=True)" "$D"
    # 3. Entropies of every response token (one base forward per row), stored with a decreasing_v2 cut.
    stamp segment
    $HB segment --data "$D" --out "$W/segmented.jsonl" --strategy decreasing_v2 --max-steps 4 \
        --batch-size "${SEGMENT_BATCH:-64}" --device "$DEVICE"
    # 4. The training cut (a group grows while the base's entropy is below H(0.9)) and the fixed 1-in-20 val split.
    [ -s "$W/all.jsonl" ] || $HB segment --from-dataset "$W/segmented.jsonl" --out "$W/all.jsonl" --strategy sliding \
        --sliding-p 0.9 --max-steps 4
    [ -s "$W/val_prompts.jsonl" ] || python3 recipes/split_dataset.py "$W/all.jsonl" "$W" $P
    # 4b. SAMPLED: each draw's sampled answers, continued where the committed ones stopped, cut as the main ones, join
    #     the train rows (recipes/split_dataset.py --add: answers to a validation prompt never train). Made once per
    #     work folder and set of draws (draw 1 alone: $W/sampled/, draws 1 and 2: $W/sampled-1-2/): a rerun after a
    #     kill must give a run it resumes the same rows (`--resume` checks them).
    if [ -n "${SAMPLED-1}" ] && [ ! -s "$TRAIN" ]; then
        ADD=()
        for N in ${SAMPLED-1}; do
            S=${D%.jsonl}-s$N.jsonl
            SP=data/prompts/train-sampled-s$N.jsonl
            [ -s "$S" ] || [ ! -s "$S.gz" ] || zcat "$S.gz" > "$S"
            [ -s "$SP" ] || python3 recipes/sampled_prompts.py $P "$SP" --draw $N
            stamp distill-sampled-s$N
            # (a draw goes on in the dtype it began with, which its meta holds: bf16, or fp32 for a draw begun on a CPU
            # without bf16 instructions, e.g. draw 5)
            DT=$(sed -n 's/.*"dtype": "\(.*\)".*/\1/p' "$S.meta.json" 2>/dev/null || true)
            ${DISTILL_SECONDS:+timeout -s INT $DISTILL_SECONDS} $HB distill --base $BASE --prompts "$SP" --out "$S" \
                --temperature 0.7 --top-p 0.9 --seed 1 --dtype ${DT:-bfloat16} --max-new-tokens 256 \
                --batch-size "${DISTILL_BATCH:-512}" --device "$DEVICE" ${LIMIT:+--limit $LIMIT} || \
                { [ -n "${DISTILL_SECONDS:-}" ] && CUT=1; }
            python3 -c "from hamburger.data.io import read_jsonl; import sys; read_jsonl(sys.argv[1], tail=\"cut\")" \
                "$S"
            stamp segment-sampled-s$N
            $HB segment --data "$S" --out "$W/segmented-s$N.jsonl" --strategy decreasing_v2 --max-steps 4 \
                --batch-size "${SEGMENT_BATCH:-64}" --device "$DEVICE"
            $HB segment --from-dataset "$W/segmented-s$N.jsonl" --out "$W/all-s$N.jsonl" --strategy sliding \
                --sliding-p 0.9 --max-steps 4
            ADD+=(--add "$W/all-s$N.jsonl")
        done
        python3 recipes/split_dataset.py "$W/all.jsonl" "$SDIR" "${ADD[@]}"
    fi
    # 5. For the LoRA run: the same train rows once more with every group of one token, so the adapted base also
    #    learns (through the KL term) to stay the base when nothing merges, which is what high knobs decode.
    if [ ! -s "$W/train-mixed.jsonl" ]; then
        rm -f "$W/train-single.jsonl"
        $HB segment --from-dataset "$W/train.jsonl" --out "$W/train-single.jsonl" --strategy sliding --max-steps 1
        cat "$W/train.jsonl" "$W/train-single.jsonl" > "$W/train-mixed.jsonl.tmp"
        cp "$W/train.jsonl.meta.json" "$W/train-mixed.jsonl.meta.json"
        mv "$W/train-mixed.jsonl.tmp" "$W/train-mixed.jsonl"
    fi
    [ -n "${CUT:-}" ] || echo "$READY" > "$W/data-ready"
}
if [ "$(cat "$W/data-ready" 2>/dev/null)" = "$READY" ]; then stamp "data ready ($READY)"; else make_data; fi

# 6. Training runs, one after the other (side by side on one 80 GB GPU the LoRA run ran out of memory): LoRA +
#    KL at merged slots only, the paper's full fine-tune + KL, LoRA + KL with a second adapter set after each row's
#    first merge, LoRA + KL everywhere (with unmerged copies of the rows), then the grafted modules alone on the
#    frozen base. RUNS picks which and in what order.
stamp train
train() {  # NAME CONFIG DATA [MORE TRAIN OPTIONS]
    local out=$W/$1
    if [ -f "$out/last/trainer_state.pt" ]; then
        grep -q '"kind": "end"' "$out/metrics.jsonl" 2>/dev/null || $HB train --out "$out" --resume
    else
        $HB train --config "$2" --data "$3" --eval-data "$W/val.jsonl" --out "$out" ${TRAIN_SET:-} "${@:4}"
    fi
    [ -f "$out-export/hamburger_config.json" ] || $HB export --model "$out/last" --out "$out-export" --dtype bfloat16
}
# the lora-fold-* runs: verify_fold's folded reading at window 48 (the reading only), the KL to the base weighted 2
FOLD_READ=(--set verify_window=48 --set stop_loss_weight=0 --set kl_weight=2)
# the keep-fold-* runs: the default fold's reading, pure KL half reversed, from the shipped model without adapters
KEEP_READ=(--set verify_fold=segments:60:0.45:first:steps=8:p=0.7 --set stop_loss_weight=0 --set kl_weight=1
           --set token_loss_weight=0 --set kl_mix=0.5 --set lr_grafted=0 --set init="$W/keep-init")
keep_init() { [ -f "$W/keep-init/hamburger_config.json" ] || $HB export --model hamburger/default_model --drop-lora \
    --out "$W/keep-init" --dtype float32; }
for run in ${RUNS:-full lora-two-sets lora-merged lora frozen}; do
    case $run in
        lora-merged) train lora-merged configs/smollm2-gpu-lora-merged.yaml "$TRAIN" > "$W/lora-merged.log" 2>&1 ;;
        lora-after-merge) train lora-after-merge configs/smollm2-gpu-lora-merged.yaml "$TRAIN" \
            --set lora_scope=after_merge > "$W/lora-after-merge.log" 2>&1 ;;
        lora-two-sets) train lora-two-sets configs/smollm2-gpu-lora-merged.yaml "$TRAIN" \
            --set lora_scope=merged_and_after > "$W/lora-two-sets.log" 2>&1 ;;
        lora-single-tail) train lora-single-tail configs/smollm2-gpu-lora-merged.yaml "$TRAIN" \
            --set single_tail=1 > "$W/lora-single-tail.log" 2>&1 ;;
        lora-fold) train lora-fold configs/smollm2-gpu-lora-merged.yaml "$TRAIN" \
            --set single_tail=1 --set fold_tail=2 > "$W/lora-fold.log" 2>&1 ;;
        lora-fold-fresh) train lora-fold-fresh configs/smollm2-gpu-lora-merged.yaml "$TRAIN" \
            --set single_tail=1 --set fold_tail=2 --set max_repeat=0.5 > "$W/lora-fold-fresh.log" 2>&1 ;;
        lora-verify-fold) train lora-verify-fold configs/smollm2-gpu-lora-merged.yaml "$TRAIN" \
            --set verify_window=16 --set stop_loss_weight=0 > "$W/lora-verify-fold.log" 2>&1 ;;
        lora-both) train lora-both configs/smollm2-gpu-lora-merged.yaml "$TRAIN" \
            --set verify_window=16 --set verify_window_every=2 > "$W/lora-both.log" 2>&1 ;;
        lora-fold-kl) train lora-fold-kl configs/smollm2-gpu-lora-merged.yaml "$TRAIN" "${FOLD_READ[@]}" \
            > "$W/lora-fold-kl.log" 2>&1 ;;
        lora-fold-pure) train lora-fold-pure configs/smollm2-gpu-lora-merged.yaml "$TRAIN" "${FOLD_READ[@]}" \
            --set token_loss_weight=0 > "$W/lora-fold-pure.log" 2>&1 ;;
        lora-fold-mix) train lora-fold-mix configs/smollm2-gpu-lora-merged.yaml "$TRAIN" "${FOLD_READ[@]}" \
            --set token_loss_weight=0 --set kl_mix=0.5 > "$W/lora-fold-mix.log" 2>&1 ;;
        lora-fold-reverse) train lora-fold-reverse configs/smollm2-gpu-lora-merged.yaml "$TRAIN" \
            "${FOLD_READ[@]}" --set token_loss_weight=0 --set kl_mix=1 > "$W/lora-fold-reverse.log" 2>&1 ;;
        lora-fold-after) train lora-fold-after configs/smollm2-gpu-lora-merged.yaml "$TRAIN" "${FOLD_READ[@]}" \
            --set token_loss_weight=0 --set kl_mix=1 --set lora_scope=merged_and_after \
            > "$W/lora-fold-after.log" 2>&1 ;;
        lora-msd-context) train lora-msd-context configs/smollm2-gpu-lora-merged.yaml "$TRAIN" \
            --set msd_context=8 > "$W/lora-msd-context.log" 2>&1 ;;
        lora-grow4) train lora-grow4 configs/smollm2-gpu-lora-merged.yaml "$TRAIN" \
            --set grow_decoder=4 > "$W/lora-grow4.log" 2>&1 ;;
        lora) train lora configs/smollm2-gpu-lora.yaml "$W/train-mixed.jsonl" > "$W/lora.log" 2>&1 ;;
        frozen) train frozen configs/smollm2-gpu-frozen.yaml "$TRAIN" > "$W/frozen.log" 2>&1 ;;
        keep-fold-lora) keep_init; train keep-fold-lora configs/smollm2-gpu-lora-merged.yaml "$TRAIN" \
            "${KEEP_READ[@]}" --set lora_scope=all --set 'recut=[]' > "$W/keep-fold-lora.log" 2>&1 ;;
        keep-fold-after) keep_init; train keep-fold-after configs/smollm2-gpu-lora-merged.yaml "$TRAIN" \
            "${KEEP_READ[@]}" --set lora_scope=after_fold --set 'recut=[]' > "$W/keep-fold-after.log" 2>&1 ;;
        keep-fold-full) keep_init; train keep-fold-full configs/smollm2-gpu-full-fast.yaml "$TRAIN" \
            "${KEEP_READ[@]}" --set compile=false > "$W/keep-fold-full.log" 2>&1 ;;
        full) train full configs/smollm2-gpu-full-fast.yaml "$TRAIN" --set compile="${COMPILE:-false}" \
            > "$W/full.log" 2>&1 ;;
        data) ;;  # the data steps only (a lent machine that gets the warm start in a later call)
        *) echo "unknown run $run (data | lora-merged | lora-single-tail | lora-fold | lora-fold-fresh | lora-verify-fold | lora-both | lora-fold-kl | lora-fold-pure | lora-fold-mix | lora-fold-reverse | keep-fold-lora | keep-fold-after | keep-fold-full | lora-msd-context | lora-grow4 | lora-two-sets | lora-after-merge | full | lora | frozen)"; exit 2 ;;
    esac
done
stamp done
