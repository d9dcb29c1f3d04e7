#!/bin/sh
# Plots a `gopt-train expert` train.csv: the held-out zero-shot step time /
# best-baseline step time (geometric mean over the held-out instances; and
# over the --validation_graph instances when the run had them) against
# wall-clock seconds, and per round the network's greedy plan and
# the search target against the best baseline (training instances). Needs
# gnuplot (Debian: gnuplot-nox).
#
#   tools/plot_expert.sh train.csv OUT.png "title"
set -eu
csv=$1
out=$2
title=${3:-gopt-train expert}
gnuplot <<GNUPLOT
set datafile separator ','
set datafile missing ''
set terminal png size 1400,600
set output '${out}'
set multiplot layout 1,2 title '${title}'
set grid
set key top right
set xlabel 'wall-clock seconds'
set ylabel 'held-out zero-shot / best baseline (geomean)'
plot '${csv}' using 2:(strlen(strcol(11)) > 0 ? \$11 : NaN) skip 1 \
     with linespoints pt 7 lw 2 lc rgb '#08519c' title 'held-out zero-shot', \
     '' using 2:(valid(14) ? \$14 : NaN) skip 1 \
     with linespoints pt 5 lw 2 lc rgb '#31a354' title 'validation + selection graphs zero-shot (picks the checkpoint)', \
     1 with lines dt 2 lc rgb '#636363' title 'best baseline'
set xlabel 'round'
set ylabel 'step time / best baseline (training instances)'
set logscale y
plot '${csv}' using 1:3 skip 1 with points pt 7 ps 0.4 lc rgb '#fdae6b' title 'network greedy plan', \
     '' using 1:3 skip 1 smooth bezier lw 2 lc rgb '#a63603' title 'greedy (smoothed)', \
     '' using 1:4 skip 1 with points pt 7 ps 0.4 lc rgb '#9ecae1' title 'search target', \
     '' using 1:4 skip 1 smooth bezier lw 2 lc rgb '#08519c' title 'target (smoothed)'
GNUPLOT
