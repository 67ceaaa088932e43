let square x = x * x
let add1 x = x + 1
let composed = square >> add1
let backwards = square << add1
[1 .. 10]
|> List.map composed
|> List.filter (fun x -> x % 2 = 0)
|> printfn "%A"
let html = "<div>" + "&lt;escaped&gt;" + "</div>"
