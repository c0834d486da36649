# Reference out-of-bag errors from ranger for the Go forest's tests.
#
# Run from the repository root (Debian: r-cran-ranger, r-cran-jsonlite):
#
#     Rscript arrowforest/forest/testdata/make_ranger_refs.R [DATA_DIR]
#
# DATA_DIR defaults to testdata. For each data set below it fits
#
#     ranger(x, y, num.trees = 500, seed = 1, num.threads = 2)
#
# with every other argument at ranger's default (mtry = floor(sqrt(p)),
# min.node.size = 1 for classification and 5 for regression, bootstrap with
# replacement, sample.fraction = 1, splitrule gini / variance), x the numeric
# feature matrix (all columns but the last) and y the last column: a factor
# for classification, numeric for regression. It writes ranger_oob_<name>.json
# next to this script with ranger's prediction.error (the OOB
# misclassification rate, or the OOB mean squared error for regression).
#
# A forest's OOB error is random: the Go test cannot expect ranger's exact
# value. So the file also has the OOB error for seeds 1..20 (same settings),
# with their mean, standard deviation, min and max, from which a test sets its
# tolerance. ranger seeds each tree from the seed and the tree index, so the
# results do not depend on num.threads. Deterministic: same inputs, same files.

`%||%` <- function(a, b) if (is.null(a)) b else a

suppressPackageStartupMessages({
  library(ranger)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
data_dir <- if (length(args) >= 1) args[[1]] else "testdata"
out_dir <- "arrowforest/forest/testdata"
if (!dir.exists(out_dir)) stop("run from the repository root (", out_dir, " not found)")

cases <- list(
  list(name = "iris", task = "classification"),
  list(name = "wine", task = "classification"),
  list(name = "breast_cancer", task = "classification"),
  list(name = "sonar", task = "classification"),
  list(name = "diabetes", task = "regression"),
  list(name = "boston_housing", task = "regression")
)
num_trees <- 500L
threads <- 2L
main_seed <- 1L
spread_seeds <- 1:20
command <- paste(c("cd <repo root> && Rscript arrowforest/forest/testdata/make_ranger_refs.R", args),
                 collapse = " ")

for (cs in cases) {
  path <- file.path(data_dir, paste0(cs$name, ".csv.gz"))
  if (!file.exists(path)) stop(path, " not found")
  df <- utils::read.csv(gzfile(path), check.names = FALSE, stringsAsFactors = FALSE,
                        colClasses = "character")
  resp <- names(df)[ncol(df)]
  features <- names(df)[-ncol(df)]
  x <- as.matrix(df[, features, drop = FALSE])
  storage.mode(x) <- "double"   # as.double on the CSV text: correctly rounded
  if (cs$task == "classification") {
    y <- factor(df[[resp]])
  } else {
    y <- as.double(df[[resp]])
  }
  fit <- function(seed) {
    ranger(x = x, y = y, num.trees = num_trees, seed = seed, num.threads = threads,
           verbose = FALSE)
  }
  rf <- fit(main_seed)
  errs <- vapply(spread_seeds, function(s) fit(s)$prediction.error, 0)
  out <- list(
    dataset = cs$name,
    source = path,
    source_md5 = unname(tools::md5sum(path)),
    task = cs$task,
    response = resp,
    n_samples = nrow(x),
    features = features,
    classes = if (cs$task == "classification") levels(y) else NULL,
    call = sprintf("ranger(x, y, num.trees = %d, seed = %d, num.threads = %d)",
                   num_trees, main_seed, threads),
    ranger_version = as.character(packageVersion("ranger")),
    r_version = R.version.string,
    command = command,
    params = list(num_trees = rf$num.trees, mtry = rf$mtry, min_node_size = rf$min.node.size,
                  splitrule = rf$splitrule, replace = rf$replace,
                  sample_fraction = rf$call$sample.fraction %||% 1,
                  seed = main_seed, num_threads = threads),
    oob_error = rf$prediction.error,
    oob_error_meaning = if (cs$task == "classification")
      "fraction of rows misclassified by the majority vote of the trees for which the row is out of bag"
    else "mean squared error of the mean prediction of the trees for which the row is out of bag",
    seeds = spread_seeds,
    oob_error_by_seed = errs,
    oob_error_mean = mean(errs),
    oob_error_sd = sd(errs),
    oob_error_min = min(errs),
    oob_error_max = max(errs)
  )
  if (cs$task == "regression") {
    out$oob_r_squared <- rf$r.squared
    out$target_variance <- mean((y - mean(y))^2)
  } else {
    out$oob_confusion <- lapply(seq_len(nrow(rf$confusion.matrix)), function(i)
      as.integer(rf$confusion.matrix[i, ]))
    out$oob_confusion_rows <- rownames(rf$confusion.matrix)
    out$oob_confusion_columns <- colnames(rf$confusion.matrix)
    out$oob_confusion_note <- "rows = true class (oob_confusion_rows), columns = predicted class (oob_confusion_columns)"
  }
  fn <- file.path(out_dir, paste0("ranger_oob_", cs$name, ".json"))
  writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE, null = "null"), fn)
  cat(sprintf("%s: mtry=%d oob_error(seed 1)=%.6g, seeds 1..20: mean %.6g sd %.3g [%.6g, %.6g]\n",
              fn, rf$mtry, rf$prediction.error, mean(errs), sd(errs), min(errs), max(errs)))
}
