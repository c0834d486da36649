# ranger half of the peer benchmark.
#
#   Rscript peers_ranger.R trunk TRAIN.csv TEST.csv LABEL TREES THREADS SEED OUT.json
#   Rscript peers_ranger.R cv FOLDS_DIR TREES THREADS SEED OUT.json
#
# Model: ranger(x, y = factor(label), num.trees = TREES, num.threads = THREADS,
# seed = SEED, probability = FALSE), everything else at ranger's defaults
# (mtry = floor(sqrt(p)), min.node.size = 1, bootstrap with replacement,
# Gini). x is a numeric matrix (ranger's x/y interface, no formula).
#
# Times (wall, and CPU of all threads of the R process) cover ranger() and
# predict() only (predict: the fastest of 3 runs); reading the CSV is outside them.
# Peak memory is measured by the caller (/usr/bin/time around Rscript).

suppressPackageStartupMessages({
  library(ranger)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
die <- function(...) { cat("peers_ranger.R: ", ..., "\n", sep = "", file = stderr()); quit(status = 2) }
if (length(args) < 1) die("usage: trunk|cv ...")

have_dt <- requireNamespace("data.table", quietly = TRUE)
load_csv <- function(path, label) {
  df <- if (have_dt) {
    as.data.frame(data.table::fread(path, colClasses = setNames("character", label),
                                    showProgress = FALSE))
  } else {
    utils::read.csv(path, check.names = FALSE, colClasses = setNames("character", label))
  }
  if (!(label %in% names(df))) die(path, " has no column ", label)
  y <- factor(df[[label]])
  x <- as.matrix(df[, setdiff(names(df), label), drop = FALSE])
  storage.mode(x) <- "double"
  list(x = x, y = y)
}

fit_predict <- function(tr, te, trees, threads, seed) {
  cpu <- function() { p <- proc.time(); p[["user.self"]] + p[["sys.self"]] }
  c0 <- cpu(); t0 <- proc.time()[["elapsed"]]
  rf <- ranger(x = tr$x, y = tr$y, num.trees = trees, num.threads = threads,
               seed = seed, probability = FALSE, verbose = FALSE)
  c1 <- cpu(); t1 <- proc.time()[["elapsed"]]
  wall <- numeric(0); cpus <- numeric(0)   # best of 3 predictions of the whole test set
  for (rep in 1:3) {
    c2 <- cpu(); t2 <- proc.time()[["elapsed"]]
    # seed: predict() breaks voting ties with a random draw, seeded from R unless given
    pred <- predict(rf, data = te$x, num.threads = threads, seed = seed, verbose = FALSE)$predictions
    wall <- c(wall, proc.time()[["elapsed"]] - t2); cpus <- c(cpus, cpu() - c2)
  }
  b <- which.min(wall)
  err <- mean(as.character(pred) != as.character(te$y))
  list(train_seconds = t1 - t0, predict_seconds = wall[b], predict_seconds_all = wall,
       train_cpu_seconds = c1 - c0, predict_cpu_seconds = cpus[b],
       train_rows = nrow(tr$x), test_rows = nrow(te$x), features = ncol(tr$x),
       mtry = rf$mtry, predict_rows_per_s = nrow(te$x) / max(wall[b], 1e-9),
       error = err, accuracy = 1 - err, oob_error = rf$prediction.error)
}

hdr <- function(trees, threads, seed) {
  list(tool = "ranger", version = as.character(packageVersion("ranger")),
       r = R.version.string,
       model = sprintf("ranger(x, y, num.trees=%d, num.threads=%d, seed=%d, probability=FALSE)",
                       trees, threads, seed),
       command = paste(c("Rscript", sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)),
                         args), collapse = " "))
}

mode <- args[[1]]
if (mode == "trunk") {
  if (length(args) != 8) die("usage: trunk TRAIN TEST LABEL TREES THREADS SEED OUT")
  trees <- as.integer(args[[5]]); threads <- as.integer(args[[6]]); seed <- as.integer(args[[7]])
  out <- hdr(trees, threads, seed)
  tr <- load_csv(args[[2]], args[[4]])
  te <- load_csv(args[[3]], args[[4]])
  r <- fit_predict(tr, te, trees, threads, seed)
  out$trunk <- r
  cat(sprintf("ranger trunk: train %.2fs, predict %.0f rows/s, error %.4f\n",
              r$train_seconds, r$predict_rows_per_s, r$error), file = stderr())
  path <- args[[8]]
} else if (mode == "cv") {
  if (length(args) != 6) die("usage: cv FOLDS_DIR TREES THREADS SEED OUT")
  trees <- as.integer(args[[3]]); threads <- as.integer(args[[4]]); seed <- as.integer(args[[5]])
  out <- hdr(trees, threads, seed)
  man <- fromJSON(file.path(args[[2]], "manifest.json"), simplifyVector = FALSE)
  out$cv <- list()
  for (ds in man$datasets) {
    folds <- list()
    for (f in ds$folds) {
      tr <- load_csv(f$train, ds$label)
      te <- load_csv(f$test, ds$label)
      # Train and test factors may differ in levels; compare as strings.
      r <- fit_predict(tr, te, trees, threads, seed)
      r$fold <- f$fold
      folds[[length(folds) + 1]] <- r
    }
    acc <- vapply(folds, function(r) r$accuracy, 0)
    out$cv[[ds$name]] <- list(mean_accuracy = mean(acc), fold_accuracy = as.list(acc),
                              train_seconds = sum(vapply(folds, function(r) r$train_seconds, 0)),
                              folds = folds)
    cat(sprintf("ranger cv %s: mean accuracy %.4f (%s)\n", ds$name, mean(acc),
                paste(sprintf("%.4f", acc), collapse = " ")), file = stderr())
  }
  path <- args[[6]]
} else {
  die("unknown mode ", mode)
}
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE), path)
