# Reference values for package dependence, from R's energy package (dCor)
# and an independent direct O(n^2) R implementation of the dissertation's
# Definition 12 (gCov_n, gCor_n): energy has no Gini correlation.
#
# Regenerate (from arrowforest/dependence/testdata):
#   Rscript make_refs.R
# R 4.x, energy 1.7.11, jsonlite. Inputs are drawn with set.seed and written
# as CSV with 17 significant digits, so the Go tests read exactly the
# values R used; refs.json holds the expected statistics.
suppressPackageStartupMessages({library(energy); library(jsonlite)})

fmt <- function(v) sprintf("%.17g", v)

write_case <- function(name, X, y = NULL, Y = NULL) {
  df <- data.frame(lapply(as.data.frame(X), fmt), check.names = FALSE)
  names(df) <- paste0("x", seq_len(ncol(df)))
  if (!is.null(y)) df$y <- as.integer(y)
  if (!is.null(Y)) {
    Yd <- as.data.frame(Y)
    for (j in seq_len(ncol(Yd))) df[[paste0("z", j)]] <- fmt(Yd[[j]])
  }
  write.csv(df, paste0(name, ".csv"), row.names = FALSE, quote = FALSE)
}

# Definition 12, written directly: Delta-hat is the mean of |x_i - x_j|
# over the C(n,2) pairs, Delta-hat_k the same within class k; classes
# with fewer than 2 rows contribute 0 (the Go package's documented rule).
gini_direct <- function(X, y) {
  X <- as.matrix(X); n <- nrow(X)
  D <- as.matrix(dist(X))
  Delta <- sum(D[upper.tri(D)]) / choose(n, 2)
  w <- 0
  for (k in sort(unique(y))) {
    idx <- which(y == k); nk <- length(idx)
    if (nk >= 2) {
      Dk <- D[idx, idx, drop = FALSE]
      w <- w + (nk / n) * sum(Dk[upper.tri(Dk)]) / choose(nk, 2)
    }
  }
  gcov <- Delta - w
  list(gcov = gcov, gcor = gcov / Delta)
}

# 0/1 label distance ("1 if different classes"), as a dist object.
label_dist <- function(y) as.dist(1 * outer(y, y, "!="))

refs <- list()
add_cat <- function(name, X, y) {
  write_case(name, X, y = y)
  g <- gini_direct(X, y)
  r <- list(n = nrow(as.matrix(X)), gcov = g$gcov, gcor = g$gcor,
            dcor = dcor(dist(as.matrix(X)), label_dist(y)))
  if (length(unique(y)) == 2) {
    # two classes coded 0/1: |y_k - y_l| is the 0/1 distance itself
    r$dcor_numeric_label <- dcor(as.matrix(X), as.numeric(y))
  }
  if (ncol(as.matrix(X)) == 1) {
    r$dcor2d <- dcor2d(as.numeric(X), as.numeric(y))
    r$pearson <- cor(as.numeric(X), as.numeric(y))
  }
  refs[[name]] <<- r
}
add_num <- function(name, X, Y) {
  write_case(name, X, Y = Y)
  r <- list(n = nrow(as.matrix(X)), dcor = dcor(as.matrix(X), as.matrix(Y)))
  if (ncol(as.matrix(X)) == 1 && ncol(as.matrix(Y)) == 1) {
    r$dcor2d <- dcor2d(as.numeric(X), as.numeric(Y))
    r$pearson <- cor(as.numeric(X), as.numeric(Y))
  }
  refs[[name]] <<- r
}

set.seed(20240401)
# 1. one column, two classes, shifted means
n <- 200; y <- rep(0:1, length.out = n)
add_cat("uni2", matrix(rnorm(n) + 0.7 * y), y)
# 2. one column, three unbalanced classes, dependence in the spread
n <- 301; y <- sample(0:2, n, replace = TRUE, prob = c(0.5, 0.3, 0.2))
add_cat("uni3", matrix(rnorm(n, sd = 1 + y)), y)
# 3. heavy ties: integer values 0..4
n <- 120; y <- rep(0:1, length.out = n)
add_cat("ties", matrix(round(runif(n, 0, 4) + 0.5 * y)), y)
# 4. independent column (statistic near 0, gCor may be negative)
n <- 250; y <- sample(0:1, n, replace = TRUE)
add_cat("indep", matrix(rexp(n)), y)
# 5. three columns, three classes (an XOR-like joint dependence)
n <- 150; y <- sample(0:2, n, replace = TRUE)
X <- matrix(rnorm(3 * n, sd = 0.5), n, 3)
X[, 1] <- X[, 1] + ifelse(y == 1, 1, -1)
X[, 2] <- X[, 2] + ifelse(y == 2, 1, 0)
add_cat("multi3", X, y)
# 6. two-column 2-D XOR, two classes
n <- 200; mu1 <- sample(c(-1, 1), n, TRUE); mu2 <- sample(c(-1, 1), n, TRUE)
y <- as.integer(mu1 * mu2 > 0)
add_cat("xor2d", cbind(rnorm(n, mu1, 0.4), rnorm(n, mu2, 0.4)), y)
# 7. a class with a single row (n_k < 2)
n <- 40; y <- c(rep(0:1, length.out = n - 1), 2L)
add_cat("single", matrix(rnorm(n) + y), y)
# 8. numeric pairs
n <- 300; x <- rnorm(n); add_num("num1", matrix(x), matrix(x^2 + rnorm(n, sd = 0.3)))
n <- 160; x <- matrix(rnorm(2 * n), n, 2)
add_num("num2", x, cbind(x[, 1] * x[, 2] + rnorm(n, sd = 0.1), rnorm(n)))
n <- 90; x <- round(rnorm(n) * 2); add_num("numties", matrix(x), matrix(round(x + rnorm(n))))

# 9. numeric labels (dCor_n with |y - y'|, the statistic of a regression
#    label): one column, a set of three columns, heavy ties. dcor_test_p is
#    energy::dcor.test's permutation p-value with R = 19999, for a weak
#    dependence (its Monte Carlo standard error is about 0.0035).
n <- 400; x <- rnorm(n); add_num("reg_x2", matrix(x), matrix(x^2 + rnorm(n)))
n <- 150; X <- matrix(rnorm(3 * n), n, 3)
add_num("reg_set", X, matrix(X[, 1] * X[, 2] + rnorm(n, sd = 0.5)))
n <- 120; x <- round(runif(n, 0, 5)); add_num("reg_ties", matrix(x), matrix(round(x / 2 + runif(n, 0, 3))))
n <- 60; x <- rnorm(n); y <- 0.1 * x^2 + rnorm(n)
add_num("reg_weak", matrix(x), matrix(y))
refs$reg_weak$dcor_test_p <- dcor.test(x, y, R = 19999)$p.value
refs$reg_weak$dcor_test_R <- 19999

writeLines(toJSON(refs, digits = NA, auto_unbox = TRUE, pretty = TRUE), "refs.json")

# 10. multiple-testing adjustments: stats::p.adjust (Holm 1979;
#     Benjamini and Hochberg 1995) of 40 p-values with ties and exact
#     zeros-and-ones edge values.
p <- c(round(runif(30), 3), 0.001, 0.001, 0.0002, 1, 1, 0.049, 0.05, 0.05, 0.012, 0.5)
writeLines(toJSON(list(p = p, holm = p.adjust(p, "holm"), BH = p.adjust(p, "BH")),
                  digits = NA, pretty = TRUE), "padjust.json")
cat("R", R.version$major, R.version$minor, "energy", as.character(packageVersion("energy")), "\n")
