# Reference values for e2e/dependence_test.go (TestRegressionLabelMatchesEnergy):
# energy::dcor between each feature and the numeric target of two real
# regression data sets of the repository's testdata/ (diabetes, 442 rows;
# boston_housing, 506 rows). forestd reads features as float32 and a
# regression target as float64, so each feature is rounded to float32 here
# (writeBin/readBin with size 4, round to nearest) and the target is not.
#
# Regenerate (from arrowforest/dependence/testdata):
#   Rscript make_energy_regression.R
# R 4.2.2, energy 1.7.11, jsonlite.
suppressPackageStartupMessages({library(energy); library(jsonlite)})

f32 <- function(v) readBin(writeBin(as.numeric(v), raw(), size = 4), "double", size = 4, n = length(v))

refs <- list()
for (name in c("diabetes", "boston_housing")) {
  d <- read.csv(gzfile(file.path("..", "..", "..", "testdata", paste0(name, ".csv.gz"))))
  y <- as.numeric(d$target)
  feats <- setdiff(names(d), "target")
  refs[[name]] <- list(rows = nrow(d), label = "target",
                       dcor = setNames(lapply(feats, function(f) dcor(f32(d[[f]]), y)), feats))
}
writeLines(toJSON(refs, digits = NA, auto_unbox = TRUE, pretty = TRUE), "energy_regression.json")
cat("R", R.version$major, R.version$minor, "energy", as.character(packageVersion("energy")), "\n")
