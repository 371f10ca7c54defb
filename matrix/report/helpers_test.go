package report

// tokensK is the unit of context lengths in the matrix: 16K is 16,384
// tokens.
const tokensK = 1024

// minIntervalRequests is the fewest requests, or gaps between tokens,
// whose spread gives an interval (matrix's).
const minIntervalRequests = 3
