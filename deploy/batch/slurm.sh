#!/usr/bin/env bash
# Grade one assignment of a large class on a Slurm cluster: an array job grades it in shards
# (attncourse grade --shard K/N, K = the array task id), then one job merges the shards into the
# class's CSV, JSON and feedback reports. Submit from the course directory (deploy/README.md,
# "Grading a large class"):
#
#   jobid=$(sbatch --parsable --array=0-7 deploy/batch/slurm.sh ch01)   # 8 shards
#   sbatch --dependency=afterok:"$jobid" deploy/batch/slurm.sh ch01      # the merge
#
# Run as an array task it grades its shard into grades/ASSIGNMENT/shard-K.json; run as a plain
# job it merges every shard there into grades/ASSIGNMENT/grades.csv and grades.json, and the
# students' reports under feedback/ (feedback/STUDENT/ASSIGNMENT/NOTEBOOK.html). Options after
# the assignment go to attncourse grade (--timeout, ...). ATTNCOURSE: the folder of the
# attncourse command [the one on PATH].
#SBATCH --job-name=attncourse-grade
#SBATCH --cpus-per-task=2
#SBATCH --mem=7G
#SBATCH --time=02:00:00
#SBATCH --output=attncourse-grade-%A_%a.out
set -euo pipefail

assignment=${1:?usage: slurm.sh ASSIGNMENT [GRADE OPTIONS ...] (e.g. ch01)}
shift
attncourse=${ATTNCOURSE:+$ATTNCOURSE/}attncourse
out=grades/$assignment

if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
    # the array's tasks must be 0 .. N-1 (--array=0-7): task K grades shard K of N
    shards=${SLURM_ARRAY_TASK_COUNT:?Slurm did not say how many tasks the array has}
    mkdir -p "$out"
    shopt -s nullglob
    submissions=(submitted/*/"$assignment"/*.ipynb)
    if [ "${#submissions[@]}" -eq 0 ]; then
        echo "slurm.sh: no submissions in $PWD/submitted/*/$assignment/ (nbgrader collect $assignment?)" >&2
        exit 2
    fi
    exec "$attncourse" grade "${submissions[@]}" --shard "$SLURM_ARRAY_TASK_ID/$shards" \
        -j "${SLURM_CPUS_PER_TASK:-2}" --json "$out/shard-$SLURM_ARRAY_TASK_ID.json" "$@"
else
    shopt -s nullglob
    parts=("$out"/shard-*.json)
    if [ "${#parts[@]}" -eq 0 ]; then
        echo "slurm.sh: no shards in $PWD/$out: submit the array job first" >&2
        exit 2
    fi
    exec "$attncourse" merge "${parts[@]}" --csv "$out/grades.csv" --json "$out/grades.json" \
        --feedback feedback
fi
