package outbox

// CheckConsumersPast exposes checkConsumersPast to the external tests.
var CheckConsumersPast = checkConsumersPast
