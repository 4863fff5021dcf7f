module redlock-c.invalid/redlock

go 1.19
