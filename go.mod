module github.com/brook-mq/brook

go 1.26
