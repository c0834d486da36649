# The R side of e2e/bench/dependence.sh: energy::dcor.test with R
# permutations on the CSV written by `forestd gen` (columns x1, y), timed
# around the test alone. Prints one JSON object.
#
#   Rscript dependence_energy.R FILE.csv R
suppressPackageStartupMessages({library(energy); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1])
R <- as.integer(args[2])
x <- d$x1
y <- as.numeric(d$y)           # two classes: |y_k - y_l| is the 0/1 label distance up to scale
set.seed(1)
t <- system.time(tst <- dcor.test(x, y, R = R))[["elapsed"]]
cat(toJSON(list(n = length(x), R = R, dcor = unname(tst$estimates["dCor"]),
                p_value = tst$p.value, seconds = t,
                energy = as.character(packageVersion("energy"))),
           auto_unbox = TRUE, digits = NA), "\n")
