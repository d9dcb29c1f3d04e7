#!/bin/sh
# Plots a gopt-train CSV log (pretrain or finetune): mean sampled reward and
# best sampled step time / default step time, against PPO steps and against
# wall-clock seconds. Needs gnuplot (Debian: gnuplot-nox).
#
#   tools/plot_training.sh LOG.csv OUT.png "title"
set -eu
csv=$1
out=$2
title=${3:-gopt-train}
gnuplot <<GNUPLOT
set datafile separator ','
set terminal png size 1400,900
set output '${out}'
set multiplot layout 2,2 title '${title}'
set key top left
set grid
set xlabel 'PPO step'
set ylabel 'mean sampled reward'
plot '${csv}' using 1:4 skip 1 with points pt 7 ps 0.3 lc rgb '#9ecae1' title 'per step', \
     '' using 1:4 skip 1 smooth bezier lw 2 lc rgb '#08519c' title 'smoothed'
set xlabel 'wall-clock seconds'
plot '${csv}' using 2:4 skip 1 with points pt 7 ps 0.3 lc rgb '#9ecae1' title 'per step', \
     '' using 2:4 skip 1 smooth bezier lw 2 lc rgb '#08519c' title 'smoothed'
set xlabel 'PPO step'
set ylabel 'best sampled step time / default step time'
set logscale y
plot '${csv}' using 1:6 skip 1 with points pt 7 ps 0.3 lc rgb '#fdae6b' title 'per step', \
     '' using 1:6 skip 1 smooth bezier lw 2 lc rgb '#a63603' title 'smoothed'
set xlabel 'wall-clock seconds'
plot '${csv}' using 2:6 skip 1 with points pt 7 ps 0.3 lc rgb '#fdae6b' title 'per step', \
     '' using 2:6 skip 1 smooth bezier lw 2 lc rgb '#a63603' title 'smoothed'
unset multiplot
GNUPLOT
