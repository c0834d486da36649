# ranger half of the class-count benchmark (manyclass.sh).
#
#   Rscript manyclass_ranger.R TRAIN.csv LABEL TREES THREADS SEED
#
# Model: ranger(x, y = factor(label), num.trees = TREES, num.threads =
# THREADS, seed = SEED, probability = FALSE), everything else at ranger's
# defaults (mtry = floor(sqrt(p)), min.node.size = 1, bootstrap with
# replacement, Gini), as peers_ranger.R fits it. Prints one line of JSON:
# the wall and CPU seconds (all threads of the R process) of ranger() alone
# (reading the CSV is outside them), the classes and the OOB error.

suppressPackageStartupMessages({
  library(ranger)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 5) {
  cat("usage: manyclass_ranger.R TRAIN.csv LABEL TREES THREADS SEED\n", file = stderr())
  quit(status = 2)
}
path <- args[1]; label <- args[2]
trees <- as.integer(args[3]); threads <- as.integer(args[4]); seed <- as.integer(args[5])

df <- as.data.frame(data.table::fread(path, colClasses = setNames("character", label),
                                      showProgress = FALSE))
y <- factor(df[[label]])
x <- as.matrix(df[, setdiff(names(df), label), drop = FALSE])
storage.mode(x) <- "double"

cpu <- function() { p <- proc.time(); p[["user.self"]] + p[["sys.self"]] }
c0 <- cpu(); t0 <- proc.time()[["elapsed"]]
rf <- ranger(x = x, y = y, num.trees = trees, num.threads = threads,
             seed = seed, probability = FALSE, verbose = FALSE)
c1 <- cpu(); t1 <- proc.time()[["elapsed"]]
cat(toJSON(list(train_seconds = t1 - t0, train_cpu_seconds = c1 - c0,
                rows = nrow(x), features = ncol(x), classes = nlevels(y),
                mtry = rf$mtry, oob_error = rf$prediction.error),
           auto_unbox = TRUE, digits = NA), "\n")
