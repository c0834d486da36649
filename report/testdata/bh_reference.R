# Reference values for report.AdjustBH: R's p.adjust(p, "BH").
# Regenerate: Rscript bh_reference.R > bh_reference.csv
p <- c(0.0099, 0.0099, 0.0495, 0.3, NA, 0.001, 1, 0.02, 0.5, 0.0396, 0.7, 0.000999)
a <- p.adjust(p, "BH")
write.csv(data.frame(p = p, bh = a), stdout(), row.names = FALSE, quote = FALSE, na = "NA")
