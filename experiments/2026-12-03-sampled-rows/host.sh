# The host lines a timing of the draws begins with (sourced): its CPU, cores and the vector extensions that decide
# which dtype runs faster (cpu_distill.sh).
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "vector extensions: $(grep -m1 flags /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx|avx2|avx512f|avx512_bf16|amx_bf16)$' \
    | tr '\n' ' ')"
