# Reference values for arrowforest/drift: energy::eqdist.e (energy 1.7.11)
# per feature and joint over every feature (Euclidean distance on the raw
# values, rounded to 10 decimals so that the CSV files hold them exactly),
# and eqdist.etest p-values with R = 1999 replicates.
# Run from this directory: Rscript make_refs.R
library(energy)
set.seed(34)
sets <- list()
# shift: three features, the second shifted by 0.5 sd, unequal sizes
n0 <- 40; n1 <- 55
ref <- data.frame(a = rnorm(n0), b = rnorm(n0, 0, 2), c = runif(n0))
cur <- data.frame(a = rnorm(n1), b = rnorm(n1, 1, 2), c = runif(n1))
sets$shift <- list(ref = round(ref, 10), cur = round(cur, 10))
# ties: integer values with many ties, and a scale of 1e4
n0 <- 30; n1 <- 25
ref <- data.frame(k = sample(0:4, n0, TRUE), big = round(rnorm(n0, 5e4, 1e4)))
cur <- data.frame(k = sample(0:5, n1, TRUE), big = round(rnorm(n1, 5e4, 1.5e4)))
sets$ties <- list(ref = round(ref, 10), cur = round(cur, 10))
# corr: two features, correlation 0 in ref and 0.8 in cur
n0 <- 60; n1 <- 60
z <- matrix(rnorm(2 * n1), n1)
ref <- data.frame(u = rnorm(n0), v = rnorm(n0))
cur <- data.frame(u = z[, 1], v = 0.8 * z[, 1] + 0.6 * z[, 2])
sets$corr <- list(ref = round(ref, 10), cur = round(cur, 10))

num <- function(v) sprintf("%.17g", v)
out <- c("{")
for (nm in names(sets)) {
  s <- sets[[nm]]
  write.csv(s$ref, paste0(nm, "_ref.csv"), row.names = FALSE)
  write.csv(s$cur, paste0(nm, "_cur.csv"), row.names = FALSE)
  sizes <- c(nrow(s$ref), nrow(s$cur))
  feats <- c()
  for (f in names(s$ref)) {
    x <- c(s$ref[[f]], s$cur[[f]])
    e <- eqdist.e(x, sizes)
    p <- eqdist.etest(x, sizes, R = 1999)$p.value
    feats <- c(feats, sprintf('"%s": {"statistic": %s, "p_value": %s}', f, num(e), num(p)))
  }
  x <- as.matrix(rbind(s$ref, s$cur))
  e <- eqdist.e(x, sizes)
  p <- eqdist.etest(x, sizes, R = 1999)$p.value
  out <- c(out, sprintf('"%s": {"features": {%s}, "joint": {"statistic": %s, "p_value": %s}},',
                        nm, paste(feats, collapse = ", "), num(e), num(p)))
}
out[length(out)] <- sub(",$", "", out[length(out)])
out <- c(out, "}")
writeLines(out, "energy_refs.json")
