package lakescore

// DataFault exposes dataFault to the external tests.
var DataFault = dataFault
