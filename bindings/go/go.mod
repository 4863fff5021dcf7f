module redlock-c/redlock

go 1.19
