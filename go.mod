module github.com/nativepool/nativepool

go 1.26.0

require (
	github.com/apache/arrow-go/v18 v18.8.0 // indirect
	github.com/leanovate/gopter v0.2.11 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/timandy/routine v1.1.6 // indirect
	golang.org/x/sync v0.25.0 // indirect
)
